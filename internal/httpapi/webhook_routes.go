package httpapi

// webhookRoutes registers the routes of webhook subscriptions and deliveries.
func (s *Server) webhookRoutes() {}
