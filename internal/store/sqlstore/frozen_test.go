package sqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/store/postgres"
	"github.com/pds-dev/pds/internal/store/sqlstore"
	"github.com/pds-dev/pds/internal/testenv"
)

// TestFrozenDatabaseEndsATransactionAtItsDeadline: a statement a
// transaction prepares on its connection, while PostgreSQL is frozen, ends
// with the caller's context; before, the prepare ignored it and held the
// request until the database woke, as the fault test found.
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
	// rather than hangs. Whether the statement ended before that, rather
	// than how long it took, tells the deadline from the waking: a bound
	// on the time would depend on the machine's speed.
	var woken atomic.Bool
	wake := time.AfterFunc(30*time.Second, func() {
		woken.Store(true)
		cluster.Thaw()
	})
	defer wake.Stop()
	defer cluster.Thaw()
	var began time.Time
	err = st.InTxAlone(ctx, func(exec func(string, ...any) error) error {
		cluster.Freeze()
		began = time.Now()
		return exec("SELECT 1 WHERE $1::int = 1", 1)
	})
	took := time.Since(began)
	t.Logf("the statement ended %s after the freeze, its deadline %s", took.Round(time.Millisecond), deadline)
	if woken.Load() {
		t.Fatalf("the statement ended (%v) only once the database woke, %s after the freeze; its deadline was %s", err, took.Round(time.Millisecond), deadline)
	}
	if err == nil {
		t.Fatal("a statement ran on a frozen database")
	}
	if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Errorf("error %v, want the deadline's", err)
	}
}
