// Package console is the second face of the service: server-rendered pages
// at /console over the same account data the API serves. A console session
// acts as one API key: its account, its scopes, its rate budget, through
// the same service functions and store methods as the API, so that no rule
// is written twice. The pages load nothing from elsewhere and run no
// script: their stylesheet is embedded, and the Content-Security-Policy
// allows only it.
package console

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/pds-dev/pds/internal/clock"
	"github.com/pds-dev/pds/internal/outage"
	"github.com/pds-dev/pds/internal/ratelimit"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/webhook"
)

// Prefix is where the console is served.
const Prefix = "/console"

// Config holds what the console shares with the API's settings.
type Config struct {
	// PublicURL is the server's base URL (0_person_url and links).
	PublicURL string
	// RateLimit is the default requests per key per minute; a console page
	// or action counts as one request of its key.
	RateLimit int
	// CustomFieldLimit is the number of live custom fields an account may
	// hold.
	CustomFieldLimit int
	// WebhookWindow is the coalescing window of person changes.
	WebhookWindow time.Duration
	// Webhook holds the settings that checking targets and rotating secrets
	// need.
	Webhook webhook.Settings
	// DatabaseTimeout bounds one page's database work, as the API's.
	DatabaseTimeout time.Duration
	// SessionTTL is how long a sign-in lasts (default 8 hours).
	SessionTTL time.Duration
	// Outages hears of pages refused for a database that cannot serve.
	Outages *outage.Log
}

// Server serves the console.
type Server struct {
	cfg     Config
	store   store.Store
	clock   clock.Clock
	limiter ratelimit.Limiter
	log     *slog.Logger
	mux     *http.ServeMux
	pages   pages
}

// New builds the console over the same store, clock and limiter as the
// API; cfg takes the API's settings.
func New(cfg Config, st store.Store, clk clock.Clock, lim ratelimit.Limiter, log *slog.Logger) *Server {
	if cfg.RateLimit <= 0 {
		cfg.RateLimit = 600
	}
	if cfg.CustomFieldLimit <= 0 {
		cfg.CustomFieldLimit = 100
	}
	if cfg.WebhookWindow <= 0 {
		cfg.WebhookWindow = 5 * time.Minute
	}
	if cfg.DatabaseTimeout <= 0 {
		cfg.DatabaseTimeout = 4 * time.Second
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = 8 * time.Hour
	}
	cfg.Webhook = cfg.Webhook.WithDefaults()
	s := &Server{cfg: cfg, store: st, clock: clk, limiter: lim, log: log, mux: http.NewServeMux(), pages: mustParsePages()}
	s.routes()
	return s
}

// Handler serves every console path; mount it at Prefix + "/".
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secureHeaders(w.Header())
		if _, pattern := s.mux.Handler(r); pattern == "" {
			s.notFound(w, r)
			return
		}
		s.mux.ServeHTTP(w, r)
	})
}

func (s *Server) routes() {
	s.mux.HandleFunc("GET "+Prefix+"/assets/{name}", s.asset)
	s.mux.HandleFunc("GET "+Prefix+"/sign-in", s.signInPage)
	s.mux.HandleFunc("POST "+Prefix+"/sign-in", s.signIn)
	s.mux.HandleFunc("GET "+Prefix+"/link/{token}", s.followLink)
	s.mux.HandleFunc("POST "+Prefix+"/sign-out", s.signOut)

	s.page("GET "+Prefix+"/{$}", "", s.overview)
	s.personRoutes()
	s.catalogRoutes()
	s.webhookRoutes()
}

// now is the console's clock, in UTC.
func (s *Server) now() time.Time { return s.clock.Now().UTC() }
