package httpapi

// personRoutes registers the routes of persons and breadcrumbs.
func (s *Server) personRoutes() {}
