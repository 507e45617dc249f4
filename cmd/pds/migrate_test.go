package main

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pds-dev/pds/internal/store/sqlstore"
	"github.com/pds-dev/pds/internal/testenv"
)

// TestServeWithoutMigrating: pds serve --migrate=false refuses a database
// pds migrate has not brought up to this binary, naming what is pending,
// and serves once it has.
func TestServeWithoutMigrating(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		db := eng.NewDatabase(t)
		refusal := map[string]string{"sqlite": "no SQLite database", "postgres": "00001_initial.sql"}[eng.Name]
		out, err := pds(t, "serve", "--migrate=false", "--addr", "127.0.0.1:0", "--database", db)
		if err == nil || exitStatus(err) != 1 || !strings.Contains(out, refusal) || !strings.Contains(out, `pds migrate`) {
			t.Fatalf("serving a database with no schema: %v (exit %d)\n%s", err, exitStatus(err), out)
		}
		if eng.Name == "sqlite" {
			if _, err := os.Stat(db); !os.IsNotExist(err) {
				t.Fatalf("refusing created %s: %v", db, err)
			}
		}

		if out, err := pds(t, "migrate", "--database", db); err != nil {
			t.Fatalf("pds migrate: %v\n%s", err, out)
		}
		serveOnce(t, db, nil, "--migrate=false")

		newest := lastMigration(t, eng.Name)
		raw := rawDB(t, eng.Name, db)
		if _, err := raw.Exec(`DELETE FROM goose_db_version WHERE version_id = (SELECT MAX(version_id) FROM goose_db_version)`); err != nil {
			t.Fatal(err)
		}
		out, err = pds(t, "serve", "--migrate=false", "--addr", "127.0.0.1:0", "--database", db)
		if err == nil || !strings.Contains(out, "1 migration pending ("+newest+")") {
			t.Fatalf("serving a database one migration behind: %v\n%s", err, out)
		}
	})
}

// TestMigrateFromTheEnvironment sets PDS_MIGRATE, so it is not parallel.
func TestMigrateFromTheEnvironment(t *testing.T) {
	t.Setenv("PDS_MIGRATE", "false")
	db := filepath.Join(t.TempDir(), "pds.db")
	out, err := pds(t, "serve", "--addr", "127.0.0.1:0", "--database", db)
	if err == nil || !strings.Contains(out, "no SQLite database") {
		t.Fatalf("PDS_MIGRATE=false with no database: %v\n%s", err, out)
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Fatalf("PDS_MIGRATE=false created %s", db)
	}
}

func lastMigration(t *testing.T, engine string) string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join("..", "..", "internal", "store", engine, "migrations", "*.sql"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no migrations for %s: %v", engine, err)
	}
	newest := filepath.Base(names[len(names)-1])
	// The migrations written in Go have no file; the newest is named so.
	if v, _ := strconv.Atoi(newest[:5]); v < sqlstore.NormalIdentifiersVersion {
		return fmt.Sprintf("%05d (a migration in Go)", sqlstore.NormalIdentifiersVersion)
	}
	return newest
}

func rawDB(t *testing.T, engine, database string) *sql.DB {
	t.Helper()
	driver := "pgx"
	if engine == "sqlite" {
		driver = "sqlite"
	}
	db, err := sql.Open(driver, database)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
