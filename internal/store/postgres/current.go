package postgres

import (
	"context"
	"io/fs"

	"github.com/pressly/goose/v3"

	"github.com/pds-dev/pds/internal/store/schema"
)

// CheckCurrent returns a *schema.BehindError when the database at url
// lacks a migration of this binary, and changes nothing: no lock, no
// version table. A database ahead of the binary (a rolling deploy's old
// instances, after pds migrate ran) is current.
func CheckCurrent(ctx context.Context, url string) error {
	db, err := openDB(url)
	if err != nil {
		return err
	}
	defer db.Close()
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return err
	}
	return schema.Check(ctx, "postgres", db, goose.DialectPostgres, sub, goMigrations()...)
}
