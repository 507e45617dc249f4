package sqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"testing"
	"time"
)

// TestBetweenWritesRunsOutsideEveryTransaction: while writers keep the
// group committer busy, a function run between writes finds the writer's
// connection in no transaction and the write lock free (BEGIN IMMEDIATE
// on a connection without a busy timeout fails at once otherwise), every
// write is kept, and the function's error reaches its caller.
func TestBetweenWritesRunsOutsideEveryTransaction(t *testing.T) {
	st := groupCommitStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	const writers, writes = 8, 40
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			for j := range writes {
				k := i*writes + j
				if err := st.InTx(ctx, func(exec func(string, ...any) error) error {
					return exec(`INSERT INTO gc_test (k, v) VALUES ($1, 'w')`, k)
				}); err != nil {
					t.Errorf("write %d: %v", k, err)
				}
			}
		})
	}
	var outside sync.WaitGroup
	for range 20 {
		outside.Go(func() {
			err := st.BetweenWrites(ctx, func(ctx context.Context, w *sql.DB) error {
				conn, err := w.Conn(ctx)
				if err != nil {
					return err
				}
				defer conn.Close()
				if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
					return err
				}
				_, err = conn.ExecContext(ctx, `ROLLBACK`)
				return err
			})
			if err != nil {
				t.Errorf("between writes: %v", err)
			}
		})
	}
	outside.Wait()
	wg.Wait()

	var n int
	if err := st.Reader().QueryRowContext(ctx, `SELECT count(*) FROM gc_test`).Scan(&n); err != nil || n != writers*writes {
		t.Errorf("%d rows (%v), want %d", n, err, writers*writes)
	}
	wrong := errors.New("refused")
	if err := st.BetweenWrites(ctx, func(context.Context, *sql.DB) error { return wrong }); !errors.Is(err, wrong) {
		t.Errorf("BetweenWrites answered %v, want the function's error", err)
	}
}
