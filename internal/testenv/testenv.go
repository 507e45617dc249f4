// Package testenv opens real databases for tests: a fresh SQLite file, or a
// fresh schema on the PostgreSQL server named by PDS_TEST_POSTGRES_URL.
package testenv

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
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

	// newMigrated, when set, makes a database with the migrations already
	// applied, more cheaply than migrating an empty one.
	newMigrated func(t testing.TB) string
}

// NewStore opens a store on a fresh database of its own: NewDatabase then
// Open, or for SQLite a copy of a database migrated once per test binary,
// which Open finds up to date.
func (e Engine) NewStore(t testing.TB) store.Store {
	if e.newMigrated != nil {
		return e.Open(t, e.newMigrated(t))
	}
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
	newMigrated: func(t testing.TB) string {
		migrated, err := sqliteTemplate()
		if err != nil {
			t.Fatalf("migrated sqlite template: %v", err)
		}
		path := filepath.Join(t.TempDir(), "pds.db")
		if err := os.WriteFile(path, migrated, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	},
}

// sqliteTemplate is the content of an SQLite file with every migration
// applied, made once per test binary. Migrating each test's file instead
// costs a large share of the tests' CPU under -race: goose parses every
// migration file (with a 4 MB scan buffer each) and the DDL runs through the
// pure-Go SQLite.
var sqliteTemplate = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "pds-sqlite-template-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "pds.db")
	if err := sqlite.Migrate(context.Background(), path); err != nil {
		return nil, err
	}
	// Closing the last connection checkpoints the write-ahead log into the
	// file; a log left behind would hold part of the schema.
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		return nil, errors.New("the migrated file left a non-empty write-ahead log")
	}
	return os.ReadFile(path)
})

// Postgres is the PostgreSQL engine; each database is a fresh schema.
var Postgres = Engine{
	Name:        "postgres",
	NewDatabase: postgresSchema,
	Open: func(t testing.TB, u string) store.Store {
		st, err := postgres.Open(context.Background(), u, postgres.Options{})
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
	u, err := postgres.WithSetting(base, "search_path", schema)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// Engines lists every engine; tests run their cases against each.
var Engines = []Engine{SQLite, Postgres}

// Raw opens database, made by e.NewDatabase, for a test's own statements
// (an operator's UPDATE behind the store's back), closed when the test
// ends: through the engine's driver, and for a database behind the pooler,
// directly, since the driver's prepared statements would not survive it.
func (e Engine) Raw(t testing.TB, database string) *sql.DB {
	t.Helper()
	driver := "pgx"
	switch e.Name {
	case SQLite.Name:
		// The store's own writer (a fold, a checkpoint) may hold the
		// write lock when the test writes: wait for it as pds's readers do.
		driver, database = "sqlite", "file:"+database+"?_pragma=busy_timeout(10000)"
	case PgBouncer.Name:
		database = DirectOf(t, database)
	}
	db, err := sql.Open(driver, database)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// ForEach runs fn as a subtest per engine, the engines in parallel: each
// subtest opens databases of its own (a fresh SQLite file, a fresh
// PostgreSQL schema). fn must therefore not touch state the other engine's
// run could see (package variables, slog.SetDefault); it cannot use
// t.Setenv or t.Chdir, which refuse to run in parallel tests.
func ForEach(t *testing.T, fn func(t *testing.T, e Engine)) {
	for _, e := range Engines {
		t.Run(e.Name, func(t *testing.T) {
			t.Parallel()
			fn(t, e)
		})
	}
}

// Configurations are the engines and PostgreSQL through a pooler in
// transaction mode: what the contract tests (internal/httpapi, pkg/client)
// run on.
var Configurations = []Engine{SQLite, Postgres, PgBouncer}

// ForEachConfiguration is ForEach over Configurations.
func ForEachConfiguration(t *testing.T, fn func(t *testing.T, e Engine)) {
	for _, e := range Configurations {
		t.Run(e.Name, func(t *testing.T) {
			t.Parallel()
			fn(t, e)
		})
	}
}

// ForEachPostgres is ForEach over PostgreSQL's two configurations: direct,
// and through a pooler in transaction mode (PgBouncer).
func ForEachPostgres(t *testing.T, fn func(t *testing.T, e Engine)) {
	for _, e := range []Engine{Postgres, PgBouncer} {
		t.Run(e.Name, func(t *testing.T) {
			t.Parallel()
			fn(t, e)
		})
	}
}

// Chromium finds headless Chromium (chromium on PATH, or Debian's
// /usr/bin/chromium) for the browser tests; without it they skip, unless
// CI is set: .ci/run installs it, so under CI its absence is a failure.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "/usr/bin/chromium"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("CI is set but Chromium is not installed (.ci/run installs Debian's chromium)")
	}
	t.Skip("Chromium is not installed; apt-get install chromium to run the browser tests")
	return ""
}

// Podman finds Debian's podman for the image test, which also needs root
// (to chroot into the image's files); without either it skips, unless CI
// is set: .ci/run installs podman and runs as root.
func Podman(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("podman")
	missing := ""
	switch {
	case err != nil:
		missing = "podman is not installed (apt-get install podman)"
	case os.Geteuid() != 0:
		missing = "the image test chroots into the image's files, which needs root"
	}
	if missing == "" {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatal("CI is set but " + missing)
	}
	t.Skip(missing)
	return ""
}
