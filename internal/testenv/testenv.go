// Package testenv opens real databases for tests: a fresh SQLite file, or a
// fresh schema on the PostgreSQL server named by PDS_TEST_POSTGRES_URL.
package testenv

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver, for schema set-up

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/store/postgres"
	"github.com/pds-dev/pds/internal/store/sqlite"
)

// Engine opens stores of one kind.
type Engine struct {
	Name string
	// NewDatabase makes an empty database and returns what Open needs.
	NewDatabase func(t testing.TB) string
	// Open opens (and migrates) a store on a database from NewDatabase.
	// Opening the same database twice gives two instances sharing it.
	Open func(t testing.TB, database string) store.Store
}

// NewStore is NewDatabase then Open.
func (e Engine) NewStore(t testing.TB) store.Store {
	return e.Open(t, e.NewDatabase(t))
}

// SQLite is the embedded engine on a temporary file.
var SQLite = Engine{
	Name: "sqlite",
	NewDatabase: func(t testing.TB) string {
		return filepath.Join(t.TempDir(), "pds.db")
	},
	Open: func(t testing.TB, path string) store.Store {
		st, err := sqlite.Open(context.Background(), path)
		if err != nil {
			t.Fatalf("open sqlite: %v", err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	},
}

// Postgres is the PostgreSQL engine; each database is a fresh schema.
var Postgres = Engine{
	Name:        "postgres",
	NewDatabase: postgresSchema,
	Open: func(t testing.TB, u string) store.Store {
		st, err := postgres.Open(context.Background(), u)
		if err != nil {
			t.Fatalf("open postgres: %v", err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	},
}

// PostgresURL is the server the PostgreSQL tests use. Without it they skip,
// except under CI, where a missing server is a failure.
func PostgresURL(t testing.TB) string {
	u := os.Getenv("PDS_TEST_POSTGRES_URL")
	if u == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("PDS_TEST_POSTGRES_URL is not set, and under CI the PostgreSQL tests must run")
		}
		t.Skip("PDS_TEST_POSTGRES_URL is not set; skipping PostgreSQL")
	}
	return u
}

// postgresSchema creates a schema of its own for one test and returns a URL
// whose search_path points at it; the schema is dropped afterwards.
func postgresSchema(t testing.TB) string {
	base := PostgresURL(t)
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	schema := "t_" + domain.RandomHex(8)
	if _, err := admin.Exec(`CREATE SCHEMA ` + schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("pgx", base)
		if err != nil {
			return
		}
		defer db.Close()
		_, _ = db.Exec(`DROP SCHEMA ` + schema + ` CASCADE`)
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// Engines lists every engine; tests run their cases against each.
var Engines = []Engine{SQLite, Postgres}

// ForEach runs fn as a subtest per engine.
func ForEach(t *testing.T, fn func(t *testing.T, e Engine)) {
	for _, e := range Engines {
		t.Run(e.Name, func(t *testing.T) { fn(t, e) })
	}
}
