package httpapi

// ChangeWaiting counts the reads of the change feed waiting now, every
// key's: a test waits for its readers to be in place instead of racing
// them with probes (which spent the key's rate limit under a fake clock
// that never refills it).
func (s *Server) ChangeWaiting() int {
	s.changeWaiters.mu.Lock()
	defer s.changeWaiters.mu.Unlock()
	n := 0
	for _, k := range s.changeWaiters.n {
		n += k
	}
	return n
}
