// Package schema tells whether a database's schema is behind the
// migrations a binary carries, without changing anything: what pds serve
// --migrate=false checks before it serves, on either engine.
package schema

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
)

// Pending lists, in order, the names of the migrations in fsys that db
// lacks. It only reads: goose's own checks (Provider.HasPending, Status)
// would create goose's version table in a database that has none, and a
// server that must not change the schema must not do even that.
func Pending(ctx context.Context, db *sql.DB, dialect goose.Dialect, fsys fs.FS, goMigrations ...*goose.Migration) ([]string, error) {
	p, err := goose.NewProvider(dialect, db, fsys, goose.WithAllowOutofOrder(true), goose.WithGoMigrations(goMigrations...))
	if err != nil {
		return nil, err
	}
	applied, err := appliedVersions(ctx, db, dialect)
	if err != nil {
		return nil, err
	}
	var pending []string
	for _, src := range p.ListSources() {
		if applied[src.Version] {
			continue
		}
		name := path.Base(src.Path)
		if src.Path == "" {
			name = fmt.Sprintf("%05d (a migration in Go)", src.Version)
		}
		pending = append(pending, name)
	}
	return pending, nil
}

// appliedVersions reads goose's version table; a database without one has
// none applied.
func appliedVersions(ctx context.Context, db *sql.DB, dialect goose.Dialect) (map[int64]bool, error) {
	versions, err := database.NewStore(dialect, goose.DefaultTablename)
	if err != nil {
		return nil, err
	}
	exists, err := tableExists(ctx, db, dialect, versions)
	if err != nil {
		return nil, fmt.Errorf("read the schema version: %w", err)
	}
	applied := map[int64]bool{}
	if !exists {
		return applied, nil
	}
	rows, err := versions.ListMigrations(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("read the schema version: %w", err)
	}
	// Rows come newest first, and a version's newest row says whether it
	// stands (goose records a rollback as a row of its own on some dialects).
	seen := map[int64]bool{}
	for _, r := range rows {
		if !seen[r.Version] {
			seen[r.Version] = true
			applied[r.Version] = r.IsApplied
		}
	}
	return applied, nil
}

// tableExists asks goose whether its version table exists, and SQLite's
// catalog when goose's SQLite dialect cannot say.
func tableExists(ctx context.Context, db *sql.DB, dialect goose.Dialect, versions database.Store) (bool, error) {
	if ext, ok := versions.(database.StoreExtender); ok {
		exists, err := ext.TableExists(ctx, db)
		if !errors.Is(err, errors.ErrUnsupported) {
			return exists, err
		}
	}
	if dialect != goose.DialectSQLite3 {
		return false, fmt.Errorf("goose's %s dialect cannot tell whether its version table exists", dialect)
	}
	var n int
	err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, versions.Tablename()).Scan(&n)
	return n > 0, err
}

// BehindError refuses a database that lacks migrations this binary
// carries, naming them.
type BehindError struct {
	Engine  string
	Pending []string
}

func (e *BehindError) Error() string {
	return fmt.Sprintf("the %s database is behind this binary: %s pending (%s); run \"pds migrate\" first (with --migrate=false pds serve never changes the schema)",
		e.Engine, count(len(e.Pending)), names(e.Pending))
}

// Check returns a *BehindError when db lacks any migration of fsys or of
// goMigrations.
func Check(ctx context.Context, engine string, db *sql.DB, dialect goose.Dialect, fsys fs.FS, goMigrations ...*goose.Migration) error {
	pending, err := Pending(ctx, db, dialect, fsys, goMigrations...)
	if err != nil {
		return fmt.Errorf("%s: %w", engine, err)
	}
	if len(pending) > 0 {
		return &BehindError{Engine: engine, Pending: pending}
	}
	return nil
}

func count(n int) string {
	if n == 1 {
		return "1 migration"
	}
	return fmt.Sprintf("%d migrations", n)
}

// names lists a few migrations in full and the rest by their number:
// a database with no schema at all lacks every one.
func names(pending []string) string {
	const shown = 5
	if len(pending) <= shown {
		return strings.Join(pending, ", ")
	}
	return strings.Join(pending[:shown-1], ", ") + fmt.Sprintf(", ... (%d more) ..., ", len(pending)-shown) + pending[len(pending)-1]
}
