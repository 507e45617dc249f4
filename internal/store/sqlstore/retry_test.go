package sqlstore_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/pds-dev/pds/internal/store/sqlstore"
	"github.com/pds-dev/pds/internal/store/storetest"
	"github.com/pds-dev/pds/internal/testenv"
)

// TestDeadlockedTransactionRunsAgain: two transactions that lock two rows
// in opposite orders deadlock on PostgreSQL, which fails one of them
// (40P01); the store runs it again, and both commit. No write path of the
// store locks so any more (lock_order.go), but a row can still be taken out
// of order (an identifier moved between a batch's locks and its write).
func TestDeadlockedTransactionRunsAgain(t *testing.T) {
	st := testenv.Postgres.NewStore(t).(*sqlstore.Store)
	ctx := context.Background()
	a, b := storetest.NewAccount(t, st), storetest.NewAccount(t, st)
	// Each first run takes its first row, then waits until the other has
	// taken its own, so that the second rows cross; later runs go straight.
	var first sync.WaitGroup
	first.Add(2)
	lockBoth := func(one, two string, firstRun *bool) error {
		return st.InTx(ctx, func(exec func(string, ...any) error) error {
			if err := exec(`UPDATE accounts SET name = name WHERE id = $1`, one); err != nil {
				return err
			}
			if *firstRun {
				*firstRun = false
				first.Done()
				first.Wait()
			}
			return exec(`UPDATE accounts SET name = name WHERE id = $1`, two)
		})
	}
	errs := make([]error, 2)
	firstRuns := []bool{true, true}
	var wg sync.WaitGroup
	wg.Go(func() { errs[0] = lockBoth(a, b, &firstRuns[0]) })
	wg.Go(func() { errs[1] = lockBoth(b, a, &firstRuns[1]) })
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("crossing transactions: %v", err)
	}
	if r := st.Retries(); r[sqlstore.ConflictDeadlock] == 0 || r[sqlstore.RetryExhausted] != 0 {
		t.Fatalf("transactions run again: %v, want a deadlock or more and nothing given up", r)
	}
}
