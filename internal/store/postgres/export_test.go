package postgres

import (
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/store/sqlstore"
)

// KeyWatchState reports whether a store's key cache listens, and on which
// backend.
func KeyWatchState(st store.Store) (up bool, pid uint32) {
	w := st.(*sqlstore.Store).KeySync().(*keyWatch)
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.up, w.pid
}
