package console

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/pds-dev/pds/internal/clock"
	"github.com/pds-dev/pds/internal/ratelimit"
	"github.com/pds-dev/pds/internal/serving"
	"github.com/pds-dev/pds/internal/store"
)

// Prefix is where the console is served.
const Prefix = "/console"

// Config holds the settings the console shares with the API, and its own.
type Config struct {
	serving.Settings
	// SessionTTL is how long a sign-in lasts (default 8 hours).
	SessionTTL time.Duration
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
	cfg.Settings = cfg.Settings.WithDefaults()
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = 8 * time.Hour
	}
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
	s.mux.HandleFunc("GET "+Prefix+"/link/{token}", s.linkPage)
	s.mux.HandleFunc("POST "+Prefix+"/link/{token}", s.followLink)
	s.mux.HandleFunc("POST "+Prefix+"/sign-out", s.signOut)

	s.page("GET "+Prefix+"/{$}", "", s.overview)
	s.personRoutes()
	s.erasureRoutes()
	s.mergeRoutes()
	s.catalogRoutes()
	s.webhookRoutes()
	s.keyRoutes()
	s.deliveryRoutes()
	s.breadcrumbRoutes()
}

// now is the console's clock, in UTC.
func (s *Server) now() time.Time { return s.clock.Now().UTC() }
