package releases

// Callers returns how many requests share the call to GitHub under way
// for the page (0 when none is).
func Callers(s *Service, page, perPage int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.flights[s.key(page, perPage)]; f != nil {
		return f.callers
	}
	return 0
}
