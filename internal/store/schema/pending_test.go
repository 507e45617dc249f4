package schema_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/store/postgres"
	"github.com/pds-dev/pds/internal/store/schema"
	"github.com/pds-dev/pds/internal/store/sqlite"
	"github.com/pds-dev/pds/internal/store/sqlstore"
	"github.com/pds-dev/pds/internal/testenv"
)

// TestKeepSchema: a store opened to keep the schema refuses a database
// with no schema, or one migration behind, naming what is pending and
// changing nothing; it opens a current database, and one ahead of the
// binary (the old instances of a rolling deploy, once pds migrate ran).
func TestKeepSchema(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		ctx := context.Background()
		files := migrationFiles(t, eng.Name)
		newest := files[len(files)-1]

		empty := eng.NewDatabase(t)
		if eng.Name == "sqlite" {
			// An empty file is an SQLite database with nothing in it.
			if err := os.WriteFile(empty, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		before := snapshot(t, eng.Name, empty)
		err := openKeeping(ctx, eng.Name, empty)
		if b := behind(t, err); !slices.Equal(b.Pending, files) {
			t.Errorf("an empty database: pending %v, want every migration %v", b.Pending, files)
		}
		if after := snapshot(t, eng.Name, empty); after != before {
			t.Errorf("refusing an empty database changed it:\nbefore %s\nafter  %s", before, after)
		}

		// One migration behind: goose forgets the newest, as if the
		// binary were a release ahead of the database.
		db := eng.NewDatabase(t)
		eng.Open(t, db).Close()
		var newestVersion int64
		if err := open(t, eng.Name, db).QueryRow(`SELECT MAX(version_id) FROM goose_db_version`).Scan(&newestVersion); err != nil {
			t.Fatal(err)
		}
		exec(t, eng.Name, db, `DELETE FROM goose_db_version WHERE version_id = `+strconv.FormatInt(newestVersion, 10))
		lagging := snapshot(t, eng.Name, db)
		err = openKeeping(ctx, eng.Name, db)
		if b := behind(t, err); !slices.Equal(b.Pending, []string{newest}) || !strings.Contains(err.Error(), newest) {
			t.Errorf("one migration behind: pending %v (%v), want [%s]", b.Pending, err, newest)
		}
		if after := snapshot(t, eng.Name, db); after != lagging {
			t.Errorf("refusing changed the database:\nbefore %s\nafter  %s", lagging, after)
		}

		exec(t, eng.Name, db, `INSERT INTO goose_db_version (version_id, is_applied) VALUES (`+strconv.FormatInt(newestVersion, 10)+`, true)`)
		if err := openKeeping(ctx, eng.Name, db); err != nil {
			t.Fatalf("a current database: %v", err)
		}
		exec(t, eng.Name, db, `INSERT INTO goose_db_version (version_id, is_applied) VALUES (99999, true)`)
		if err := openKeeping(ctx, eng.Name, db); err != nil {
			t.Fatalf("a database ahead of the binary: %v", err)
		}
	})
}

// TestKeepSchemaCreatesNoFile: with nothing at the path, SQLite would
// create a database; a store that keeps the schema refuses instead.
func TestKeepSchemaCreatesNoFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "pds.db")
	err := openKeeping(context.Background(), "sqlite", path)
	if err == nil || !strings.Contains(err.Error(), "pds migrate") {
		t.Fatalf("a missing file: %v, want a refusal that says to run pds migrate", err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 0 {
		t.Fatalf("refusing created %v", entries)
	}
}

func openKeeping(ctx context.Context, engine, database string) error {
	var st store.Store
	var err error
	if engine == "postgres" {
		st, err = postgres.Open(ctx, database, postgres.Options{KeepSchema: true})
	} else {
		st, err = sqlite.OpenWith(ctx, database, sqlite.Options{KeepSchema: true})
	}
	if err == nil {
		st.Close()
	}
	return err
}

func behind(t *testing.T, err error) *schema.BehindError {
	t.Helper()
	var b *schema.BehindError
	if !errors.As(err, &b) {
		t.Fatalf("got %v, want a *schema.BehindError", err)
	}
	return b
}

// migrationFiles lists an engine's migrations, as the binary carries them.
func migrationFiles(t *testing.T, engine string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join("..", engine, "migrations", "*.sql"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no migrations for %s: %v", engine, err)
	}
	for i, n := range names {
		names[i] = filepath.Base(n)
	}
	// The migrations written in Go have no file, and are named by their
	// version where they come.
	goName := fmt.Sprintf("%05d (a migration in Go)", sqlstore.NormalIdentifiersVersion)
	names = append(names, goName)
	slices.SortFunc(names, func(a, b string) int { return strings.Compare(a[:5], b[:5]) })
	return names
}

func open(t *testing.T, engine, database string) *sql.DB {
	t.Helper()
	driver, dsn := "pgx", database
	if engine == "sqlite" {
		driver, dsn = "sqlite", "file:"+database+"?mode=rw"
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func exec(t *testing.T, engine, database, query string) {
	t.Helper()
	if _, err := open(t, engine, database).Exec(query); err != nil {
		t.Fatal(err)
	}
}

// snapshot describes a database's tables, indexes and goose's versions: a
// schema change of any kind changes it. An SQLite file that does not exist
// yet is "no file".
func snapshot(t *testing.T, engine, database string) string {
	t.Helper()
	catalog := `SELECT string_agg(c.relkind::text || ':' || c.relname, ',' ORDER BY c.relname) FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema()`
	versions := `SELECT string_agg(version_id || ':' || is_applied, ',' ORDER BY id) FROM goose_db_version`
	if engine == "sqlite" {
		if _, err := os.Stat(database); err != nil {
			return "no file"
		}
		catalog = `SELECT group_concat(type || ':' || name, ',') FROM (SELECT type, name FROM sqlite_master ORDER BY name)`
		versions = `SELECT group_concat(version_id || ':' || is_applied, ',') FROM (SELECT version_id, is_applied FROM goose_db_version ORDER BY id)`
	}
	db := open(t, engine, database)
	var tables sql.NullString
	if err := db.QueryRow(catalog).Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tables.String, "goose_db_version") {
		return "tables " + tables.String
	}
	var applied sql.NullString
	if err := db.QueryRow(versions).Scan(&applied); err != nil {
		t.Fatal(err)
	}
	return "tables " + tables.String + "; versions " + applied.String
}
