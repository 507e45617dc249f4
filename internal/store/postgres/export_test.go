package postgres

import (
	"context"
	"database/sql"
	"io/fs"

	"github.com/pressly/goose/v3"

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

// OpenPolling is Open with a key cache that reads the counter of key
// changes (keyPoll), as behind a pooler, on any URL.
func OpenPolling(ctx context.Context, url string) (store.Store, error) {
	st, err := open(ctx, url, Options{}, true)
	if err != nil {
		return nil, err
	}
	return st, nil
}

// KeyCacheListens reports whether a store's key cache listens for key
// changes (keyWatch) rather than reading their counter (keyPoll).
func KeyCacheListens(st store.Store) bool {
	_, ok := st.(*sqlstore.Store).KeySync().(*keyWatch)
	return ok
}

// RerunMigration applies one migration down and up again on the database
// at url, as a database written before it meets it.
func RerunMigration(ctx context.Context, url string, version int64) error {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return err
	}
	defer db.Close()
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, sub, goose.WithAllowOutofOrder(true), goose.WithGoMigrations(goMigrations()...))
	if err != nil {
		return err
	}
	if _, err := p.ApplyVersion(ctx, version, false); err != nil {
		return err
	}
	_, err = p.ApplyVersion(ctx, version, true)
	return err
}

// OwnsSession reports whether a connection to url is a session of its own
// (ownsSession), as Open decides whether to name its statements.
func OwnsSession(ctx context.Context, url string) (bool, error) {
	cfg, err := connConfig(url)
	if err != nil {
		return false, err
	}
	return ownsSession(ctx, cfg)
}

// OpenRoutingEveryRead is Open whose safe reads of every context go to a
// replica caught up with the moment of the call (Options.routeEveryRead),
// as if each call were a request of its own: for the conformance suite.
func OpenRoutingEveryRead(ctx context.Context, url string, opts Options) (store.Store, error) {
	opts.routeEveryRead = true
	st, err := open(ctx, url, opts, false)
	if err != nil {
		return nil, err
	}
	return st, nil
}
