// Package postgres is the engine for deployments that outgrow one machine:
// any number of instances share one database.
package postgres

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/store/sqlstore"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Open connects to the database at url and applies the migrations.
func Open(ctx context.Context, url string) (store.Store, error) {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(20)
	db.SetMaxIdleConns(10)
	if err := migrate(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	return sqlstore.New(sqlstore.Dialect{Name: "postgres", Numbered: true}, db, db, isUniqueViolation), nil
}

// Migrate applies the migrations to the database at url.
func Migrate(ctx context.Context, url string) error {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return err
	}
	defer db.Close()
	return migrate(ctx, db)
}

// migrate holds a session advisory lock while migrating, so instances that
// start together apply each migration once.
func migrate(ctx context.Context, db *sql.DB) error {
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return err
	}
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, sub, goose.WithSessionLocker(locker), goose.WithAllowOutofOrder(true))
	if err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate postgres: %w", err)
	}
	return nil
}

func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}
