package httpapi

// catalogRoutes registers the routes of tags, custom fields, campaigns and projects.
func (s *Server) catalogRoutes() {}
