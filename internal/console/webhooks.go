package console

func (s *Server) webhookRoutes() {}
