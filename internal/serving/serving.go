// Package serving holds the settings the two faces of one server, the API
// (internal/httpapi) and the console (internal/console), share, with their
// defaults in one place, so that a page and a request run by the same rules.
package serving

import (
	"time"

	"github.com/pds-dev/pds/internal/outage"
	"github.com/pds-dev/pds/internal/webhook"
)

// The defaults of the settings (and of pds serve's flags).
const (
	DefaultRateLimit        = 600
	DefaultCustomFieldLimit = 100
	DefaultWebhookWindow    = 5 * time.Minute
	// DefaultDatabaseTimeout leaves a request refused for a frozen database
	// time to be answered within 5 s.
	DefaultDatabaseTimeout = 4 * time.Second
)

// Settings are what the API and the console both need.
type Settings struct {
	// PublicURL is the base of links such as 0_person_url, without a
	// trailing slash.
	PublicURL string
	// RateLimit is the default number of requests per key per minute; a
	// console page or action counts as one request of its key.
	RateLimit int
	// CustomFieldLimit is the number of live custom fields an account may
	// hold.
	CustomFieldLimit int
	// WebhookWindow is how long a burst of changes to one person stays open
	// after its latest change before it is delivered.
	WebhookWindow time.Duration
	// Webhook holds the settings that checking targets and rotating secrets
	// need (private targets, resolver, retry schedule).
	Webhook webhook.Settings
	// DatabaseTimeout bounds the database work of one request or page (a
	// streamed export's: of each statement); past it the request is
	// refused with a 503.
	DatabaseTimeout time.Duration
	// Outages, when set, hears of every request refused because the
	// database could not serve it, and of every request served.
	Outages *outage.Log
}

// WithDefaults returns s with every zero setting at its default.
func (s Settings) WithDefaults() Settings {
	if s.RateLimit <= 0 {
		s.RateLimit = DefaultRateLimit
	}
	if s.CustomFieldLimit <= 0 {
		s.CustomFieldLimit = DefaultCustomFieldLimit
	}
	if s.WebhookWindow <= 0 {
		s.WebhookWindow = DefaultWebhookWindow
	}
	if s.DatabaseTimeout <= 0 {
		s.DatabaseTimeout = DefaultDatabaseTimeout
	}
	s.Webhook = s.Webhook.WithDefaults()
	return s
}
