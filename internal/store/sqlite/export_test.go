package sqlite

import (
	"context"
	"database/sql"

	"github.com/pressly/goose/v3"

	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/store/sqlstore"
)

// RerunMigration applies one migration down and up again on the file at
// path, as a database written before it meets it.
func RerunMigration(ctx context.Context, path string, version int64) error {
	db, err := sql.Open("sqlite", dsn(path, false, busyTimeout))
	if err != nil {
		return err
	}
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectSQLite3, db, mustSub(migrations, "migrations"), goose.WithAllowOutofOrder(true),
		goose.WithGoMigrations(goMigrations()...))
	if err != nil {
		return err
	}
	if _, err := p.ApplyVersion(ctx, version, false); err != nil {
		return err
	}
	_, err = p.ApplyVersion(ctx, version, true)
	return err
}

// CounterReads is how many times the store's key cache read the counter of
// key changes.
func CounterReads(st store.Store) int64 {
	return st.(*sqlstore.Store).KeySync().(*changeCounter).counted.Load()
}
