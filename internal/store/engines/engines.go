// Package engines opens the storage engine a database names: a postgres://
// URL is PostgreSQL, anything else an SQLite file. Every command, the
// transfer and the benchmark open their stores here, so that which engine
// serves a database is decided in one place.
package engines

import (
	"context"
	"log/slog"
	"strings"

	"github.com/pds-dev/pds/internal/secrets"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/store/postgres"
	"github.com/pds-dev/pds/internal/store/sqlite"
)

// Options are what opening a store may be told, whichever the engine.
type Options struct {
	// KeepSchema leaves the schema as it is found and refuses one that
	// lacks a migration (pds serve --migrate=false); otherwise Open
	// migrates.
	KeepSchema bool
	// Secrets seals the database's secrets under the operator's key
	// (--secrets-key-file); nil keeps them in clear.
	Secrets *secrets.Keyring
	// DirectURL reaches a PostgreSQL database without the pooler the
	// database's URL names (--database-direct); unused for SQLite.
	DirectURL string
	// Replicas are streaming standbys of the PostgreSQL primary that serve
	// the reads safe on a replica (--database-replica); unused for SQLite.
	Replicas []string
	// Log takes what an SQLite store says of the faults it mends; nil
	// discards.
	Log *slog.Logger
}

// IsPostgres says whether database names PostgreSQL rather than an SQLite
// file.
func IsPostgres(database string) bool {
	return strings.HasPrefix(database, "postgres://") || strings.HasPrefix(database, "postgresql://")
}

// Name is the engine database names: "postgres" or "sqlite".
func Name(database string) string {
	if IsPostgres(database) {
		return "postgres"
	}
	return "sqlite"
}

// Open opens (and, unless told to keep it, migrates) the store database
// names.
func Open(ctx context.Context, database string, o Options) (store.Store, error) {
	if IsPostgres(database) {
		return postgres.Open(ctx, database, postgres.Options{DirectURL: o.DirectURL, KeepSchema: o.KeepSchema, Secrets: o.Secrets,
			Replicas: o.Replicas})
	}
	return sqlite.OpenWith(ctx, database, sqlite.Options{KeepSchema: o.KeepSchema, Secrets: o.Secrets, Log: o.Log})
}
