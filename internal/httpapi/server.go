package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/pds-dev/pds/internal/clock"
	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/ratelimit"
	"github.com/pds-dev/pds/internal/serving"
	"github.com/pds-dev/pds/internal/store"
)

// Config holds the server settings the handlers need: those it shares
// with the console, and its own.
type Config struct {
	serving.Settings
	// Metrics, when set, counts requests and rate-limit refusals.
	Metrics RequestMetrics
	// Console, when set, serves every path under /console/ (the browser
	// console, internal/console), behind the same request ids, logs,
	// metrics and drain as the API.
	Console http.Handler
}

// RequestMetrics hears of every answered request (route is the ServeMux
// pattern, "unmatched" for none), of every 429 for a spent budget and of
// every 503 for a database that could not serve.
type RequestMetrics interface {
	Request(route string, status int, took time.Duration)
	RateLimited()
	Unavailable(cause domain.Cause)
}

// Server serves the API.
type Server struct {
	cfg     Config
	store   store.Store
	clock   clock.Clock
	limiter ratelimit.Limiter
	log     *slog.Logger
	mux     *http.ServeMux
	table   []Route
	// draining is set once the server is stopping (Drain).
	draining atomic.Bool
	// changeWaiters bounds the reads of the change feed waiting at once.
	changeWaiters waiters
}

// Route describes one registered operation, for tests that hold every route
// to the contract and to its scope.
type Route struct {
	Pattern string // "GET /tags/{tag_id}"
	Public  bool   // no key needed
	Scope   domain.Scope
}

// Routes lists every registered operation.
func (s *Server) Routes() []Route { return append([]Route(nil), s.table...) }

// New builds a server. The limiter decides whether budgets are per process
// (SQLite) or shared through the database (PostgreSQL).
func New(cfg Config, st store.Store, clk clock.Clock, lim ratelimit.Limiter, log *slog.Logger) *Server {
	cfg.Settings = cfg.Settings.WithDefaults()
	s := &Server{cfg: cfg, store: st, clock: clk, limiter: lim, log: log, mux: http.NewServeMux(),
		changeWaiters: waiters{max: domain.MaxChangesWaiters}}
	s.routes()
	return s
}

// Handler returns the whole API with its outer middleware.
func (s *Server) Handler() http.Handler {
	return s.withDrain(s.withRequestID(s.withLogging(s.withRecover(http.HandlerFunc(s.dispatch)))))
}

// Drain readies the server to stop: /readyz answers 503 from now on, so a
// load balancer takes it out of rotation, and every answer carries
// Connection: close, so that no client keeps a connection the server is
// about to close and no request is cut when it does. Requests keep being
// served in full meanwhile.
func (s *Server) Drain() { s.draining.Store(true) }

func (s *Server) withDrain(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.draining.Load() {
			w.Header().Set("Connection", "close")
		}
		next.ServeHTTP(w, r)
	})
}

// dispatch answers unknown routes and wrong methods with problem documents
// instead of the mux's plain text.
func (s *Server) dispatch(w http.ResponseWriter, r *http.Request) {
	h, pattern := s.mux.Handler(r)
	if pattern != "" {
		s.mux.ServeHTTP(w, r)
		return
	}
	rec := &statusOnly{header: http.Header{}}
	h.ServeHTTP(rec, r)
	if allow := rec.header.Get("Allow"); rec.status == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", allow)
		writeProblem(w, r, newProblem(http.StatusMethodNotAllowed,
			"The method "+r.Method+" is not allowed on this path; allowed: "+allow+"."))
		return
	}
	writeProblem(w, r, newProblem(http.StatusNotFound, "No route matches "+r.Method+" "+r.URL.Path+"."))
}

// statusOnly records what the mux's fallback handler would have written.
type statusOnly struct {
	header http.Header
	status int
}

func (s *statusOnly) Header() http.Header         { return s.header }
func (s *statusOnly) Write(b []byte) (int, error) { return len(b), nil }
func (s *statusOnly) WriteHeader(code int)        { s.status = code }

// handlerFunc is an endpoint: it writes a success response or returns an error.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// anyScope marks routes that need a valid key but no particular scope.
const anyScope domain.Scope = ""

// routeOpts says how a route is guarded.
type routeOpts struct {
	public   bool // no key needed
	uncount  bool // not counted against the rate limit
	scope    domain.Scope
	hasScope bool
	// stream: the handler bounds each of its statements by the database
	// deadline itself (the export, which runs as long as the account is
	// large); the key and the budget are checked under it all the same.
	stream bool
}

// handle registers an authenticated, scoped, rate-limited route.
func (s *Server) handle(pattern string, scope domain.Scope, h handlerFunc) {
	s.register(pattern, routeOpts{scope: scope, hasScope: scope != anyScope}, h)
}

// handleStream is handle for a route whose handler bounds each statement
// by the database deadline itself (routeOpts.stream).
func (s *Server) handleStream(pattern string, scope domain.Scope, h handlerFunc) {
	s.register(pattern, routeOpts{scope: scope, hasScope: scope != anyScope, stream: true}, h)
}

// register guards a route as o says. Its database work runs under the
// deadline: a database that does not answer in time gives a 503 rather
// than a request that waits for as long as the database hangs.
func (s *Server) register(pattern string, o routeOpts, h handlerFunc) {
	s.table = append(s.table, Route{Pattern: pattern, Public: o.public, Scope: o.scope})
	takes := takesQuery(pattern)
	s.mux.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		client := r.Context()
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			// Only a request that changes nothing may be read from a
			// replica, caught up with its arrival (store.MayReadReplica).
			client = store.MayReadReplica(client)
		}
		bounded, cancel := context.WithTimeout(client, s.cfg.DatabaseTimeout)
		defer cancel()
		r = r.WithContext(bounded)
		var p *principal
		if !o.public {
			keepPrivate(w.Header())
			var ok bool
			if p, ok = s.authenticate(w, r); !ok {
				return
			}
			if o.hasScope {
				if err := p.key.Require(o.scope); err != nil {
					s.writeError(w, r, err)
					return
				}
			}
			if !o.uncount && !s.rateLimit(w, r, p) {
				return
			}
		}
		q, err := checkRequest(r, takes)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		ctx := bounded
		if o.stream {
			ctx = client
		}
		if p != nil {
			ctx = context.WithValue(ctx, principalKey{}, p)
		}
		r = r.WithContext(withQuery(ctx, q))
		if err := h(w, r); err != nil {
			s.writeError(w, r, err)
		}
	}))
}

// keepPrivate marks an answer to a request with a key, whatever its
// status: it may hold personal data or a webhook's full secret, which no
// cache may keep, and no browser may read it as another type than the one
// declared.
func keepPrivate(h http.Header) {
	h["Cache-Control"], h["X-Content-Type-Options"] = noStore, noSniff
}

// Header values written with every answer, made once (net/http only reads
// them): the keys are in canonical form already.
var (
	noStore         = []string{"no-store"}
	noSniff         = []string{"nosniff"}
	jsonContentType = []string{"application/json"}
)

// now is the server's clock, in UTC.
func (s *Server) now() time.Time { return s.clock.Now().UTC() }
