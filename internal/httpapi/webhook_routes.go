package httpapi

import "github.com/pds-dev/pds/internal/domain"

// webhookRoutes registers the routes of webhook subscriptions and deliveries.
func (s *Server) webhookRoutes() {
	s.handle("POST /webhooks", domain.ScopeWebhooksWrite, s.createWebhook)
	s.handle("GET /webhooks", domain.ScopeWebhooksRead, s.listWebhooks)
	s.handle("GET /webhooks/{id}", domain.ScopeWebhooksRead, s.getWebhook)
	s.handle("PATCH /webhooks/{id}", domain.ScopeWebhooksWrite, s.updateWebhook)
	s.handle("DELETE /webhooks/{id}", domain.ScopeWebhooksWrite, s.deleteWebhook)
	s.handle("POST /webhooks/{id}/rotate-secret", domain.ScopeWebhooksWrite, s.rotateSecret)
	s.handle("GET /webhooks/{id}/deliveries", domain.ScopeWebhooksRead, s.listDeliveries)
	s.handle("GET /webhooks/{id}/deliveries/{delivery_id}", domain.ScopeWebhooksRead, s.getDelivery)
	s.handle("POST /webhooks/{id}/deliveries/{delivery_id}/redeliver", domain.ScopeWebhooksWrite, s.redeliver)
	s.handle("POST /webhooks/{id}/deliveries/redeliver-failed", domain.ScopeWebhooksWrite, s.redeliverFailed)
}
