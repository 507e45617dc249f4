package sqlstore

import "time"

// SetKeyCacheClock replaces the real time the key cache ages its entries by.
func (s *Store) SetKeyCacheClock(now func() time.Time) { s.keys.now = now }
