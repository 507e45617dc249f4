package sqlite_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/pds-dev/pds/internal/store/sqlite"
	"github.com/pds-dev/pds/internal/store/storetest"
	"github.com/pds-dev/pds/internal/testenv"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, testenv.SQLite.NewStore)
}

// TestSignaturesRedactedAtRest: attempts keep their signatures' time and
// scheme, not their values; migration 00140 redacts those recorded whole.
func TestSignaturesRedactedAtRest(t *testing.T) {
	t.Parallel()
	path := testenv.SQLite.NewDatabase(t)
	st := testenv.SQLite.Open(t, path)
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	storetest.SignaturesRedactedAtRest(t, st, db, func() error {
		return sqlite.RerunMigration(context.Background(), path, 140)
	})
}

// TestIdentifiersNormalizedAtRest: migration 00210 puts identifiers an
// earlier version stored in another form into the normal form.
func TestIdentifiersNormalizedAtRest(t *testing.T) {
	t.Parallel()
	path := testenv.SQLite.NewDatabase(t)
	st := testenv.SQLite.Open(t, path)
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	storetest.IdentifiersNormalizedAtRest(t, st, db, func() error {
		return sqlite.RerunMigration(context.Background(), path, 210)
	})
}
