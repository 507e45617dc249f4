package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/pds-dev/pds/internal/domain"
)

// TestUnavailable: what SQLite reports when it cannot serve for now (no
// room to write, the write lock held past the busy timeout) is named as
// its fault; a constraint or a defect is not. The errors are the driver's
// own.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "faults.db")
	open := func(pragmas string) *sql.DB {
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)"+pragmas)
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		t.Cleanup(func() { db.Close() })
		return db
	}
	db := open("&_pragma=busy_timeout(10)")
	if _, err := db.Exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT UNIQUE)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO t (v) VALUES ('a')`); err != nil {
		t.Fatal(err)
	}
	_, unique := db.Exec(`INSERT INTO t (v) VALUES ('a')`)
	_, syntax := db.Exec(`INSERT INTO nowhere VALUES (1)`)

	// The write lock held by another connection, past the busy timeout.
	holder := open("")
	tx, err := holder.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`INSERT INTO t (v) VALUES ('b')`); err != nil {
		t.Fatal(err)
	}
	_, busy := db.Exec(`INSERT INTO t (v) VALUES ('c')`)
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}

	// No room: the file may not grow past its pages.
	var pages int
	if err := db.QueryRow(`PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`PRAGMA max_page_count = ` + strconv.Itoa(pages)); err != nil {
		t.Fatal(err)
	}
	var full error
	for i := 0; full == nil && i < 10000; i++ {
		_, full = db.Exec(`INSERT INTO t (v) VALUES (hex(randomblob(512)))`)
	}

	for _, c := range []struct {
		name string
		err  error
		want domain.Cause
	}{
		{"no room to write", full, domain.CauseDiskFull},
		{"the write lock held past the busy timeout", busy, domain.CauseTimeout},
		{"a unique violation", unique, ""},
		{"a missing table (a defect)", syntax, ""},
		{"anything else", errors.New("boom"), ""},
	} {
		if c.err == nil {
			t.Fatalf("%s: the driver reported no error", c.name)
		}
		if got := unavailable(c.err); got != c.want {
			t.Errorf("%s (%v): %q, want %q", c.name, c.err, got, c.want)
		}
	}
}
