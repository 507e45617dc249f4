package sqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/store/postgres"
	"github.com/pds-dev/pds/internal/store/sqlstore"
	"github.com/pds-dev/pds/internal/testenv"
)

// TestFrozenDatabaseEndsATransactionAtItsDeadline: a statement a
// transaction prepares on its connection, while PostgreSQL is frozen, ends
// with the caller's context; before, the prepare ignored it and held the
// request until the database woke (an answer of 10 s in the fault test).
func TestFrozenDatabaseEndsATransactionAtItsDeadline(t *testing.T) {
	if testing.Short() {
		t.Skip("a cluster of the test's own; skipped with -short")
	}
	t.Parallel()
	cluster := testenv.NewCluster(t)
	db, err := sql.Open("pgx", cluster.URL)
	if err != nil {
		t.Fatal(err)
	}
	st := sqlstore.New(postgres.Dialect, db, db, countingIsUnique)
	t.Cleanup(func() { st.Close() })

	const deadline = 500 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	// However it ends, the cluster wakes: without the fix the test fails
	// rather than hangs.
	wake := time.AfterFunc(8*time.Second, cluster.Thaw)
	defer wake.Stop()
	defer cluster.Thaw()
	var began time.Time
	err = st.InTxAlone(ctx, func(exec func(string, ...any) error) error {
		cluster.Freeze()
		began = time.Now()
		return exec("SELECT 1 WHERE $1::int = 1", 1)
	})
	took := time.Since(began)
	if err == nil {
		t.Fatal("a statement ran on a frozen database")
	}
	if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Errorf("error %v, want the deadline's", err)
	}
	if took > deadline+time.Second {
		t.Errorf("the statement ended %s after the freeze, its deadline was %s", took.Round(time.Millisecond), deadline)
	}
}
