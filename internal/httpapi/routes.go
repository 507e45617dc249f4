package httpapi

import "net/http"

// routes registers every operation with the scope it requires (spec section
// 4 and decisions.md section 1). Each resource's file registers its own.
func (s *Server) routes() {
	s.register("GET /healthz", routeOpts{public: true}, s.healthz)
	s.register("GET /readyz", routeOpts{public: true}, s.readyz)
	s.register("GET /openapi.json", routeOpts{public: true}, s.openapiJSON)
	s.register("GET /docs", routeOpts{public: true}, s.docs)
	s.register("GET /docs/reference.js", routeOpts{public: true}, s.docsScript)

	s.register("GET /me", routeOpts{uncount: true}, s.whoami)

	s.catalogRoutes()
	s.personRoutes()
	s.erasureRoutes()
	s.webhookRoutes()

	if s.cfg.Console != nil {
		// Not operations of the contract: the console's pages, which guard
		// themselves (a session that acts as a key).
		s.mux.Handle("/console/", s.cfg.Console)
		s.mux.Handle("GET /console", http.RedirectHandler("/console/", http.StatusMovedPermanently))
	}
}
