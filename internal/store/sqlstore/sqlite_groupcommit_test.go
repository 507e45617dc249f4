package sqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/store/sqlstore"
	"github.com/pds-dev/pds/internal/testenv"
)

// waitQueued waits until n writes that the calling goroutine started wait
// in the committer's queue, each parked on its send to the committer
// (which, held by a blocking write, takes none): a write queued is one
// that reached the queue, however slowly the machine ran it.
func waitQueued(t *testing.T, n int) {
	t.Helper()
	// Another test's writes, parallel to this one, are started by another
	// goroutine.
	self, _, _ := strings.Cut(stacks(false), " [")
	by := " in " + self + "\n"
	testenv.Eventually(t, 30*time.Second, fmt.Sprintf("%d writes queued", n), func() bool {
		queued := 0
		for _, g := range strings.Split(stacks(true), "\n\n") {
			header, _, _ := strings.Cut(g, "\n")
			if strings.Contains(header, "[select") && strings.Contains(g, "sqlstore.(*committer).submit(") && strings.Contains(g+"\n", by) {
				queued++
			}
		}
		return queued >= n
	})
}

// stacks is runtime.Stack's whole text.
func stacks(all bool) string {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, all)
		if n < len(buf) {
			return string(buf[:n])
		}
		buf = make([]byte, 2*len(buf))
	}
}

func groupCommitStore(t *testing.T) *sqlstore.Store {
	t.Helper()
	st, ok := testenv.SQLite.NewStore(t).(*sqlstore.Store)
	if !ok {
		t.Fatal("the SQLite store is not a *sqlstore.Store")
	}
	if err := st.InTx(context.Background(), func(exec func(string, ...any) error) error {
		return exec(`CREATE TABLE gc_test (k INTEGER PRIMARY KEY, v TEXT NOT NULL)`)
	}); err != nil {
		t.Fatal(err)
	}
	return st
}

// rowsOf counts the rows of gc_test with keys k and k+1,000,000.
func rowsOf(t *testing.T, st *sqlstore.Store, k int) int {
	t.Helper()
	var n int
	if err := st.Reader().QueryRow(`SELECT count(*) FROM gc_test WHERE k IN ($1, $2)`, k, k+1_000_000).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// takeKey stores key -1, which writers that must fail by a constraint
// violation insert again.
func takeKey(t *testing.T, st *sqlstore.Store) {
	t.Helper()
	if err := st.InTx(context.Background(), func(exec func(string, ...any) error) error {
		return exec(`INSERT INTO gc_test (k, v) VALUES (-1, 'taken')`)
	}); err != nil {
		t.Fatal(err)
	}
}

// checkWhole fails unless writer i left both its rows when it was
// acknowledged and none when it failed (with failure).
func checkWhole(t *testing.T, st *sqlstore.Store, i int, acknowledged bool, failure any) {
	t.Helper()
	got := rowsOf(t, st, i)
	switch {
	case acknowledged && got != 2:
		t.Errorf("writer %d acknowledged with %d of its 2 rows", i, got)
	case !acknowledged && got != 0:
		t.Errorf("writer %d failed (%v) and left %d rows", i, failure, got)
	}
}

// checkNoSlowRows fails if a row of an INSERT interrupted by its context
// ending was kept.
func checkNoSlowRows(t *testing.T, st *sqlstore.Store) {
	t.Helper()
	var slow int
	if err := st.Reader().QueryRow(`SELECT count(*) FROM gc_test WHERE v = 'slow'`).Scan(&slow); err != nil || slow != 0 {
		t.Errorf("%d rows of the interrupted INSERTs (%v)", slow, err)
	}
}

// TestGroupCommitSavepoints runs many concurrent write transactions on
// SQLite, which group commit runs together; some fail, by their own error,
// by a constraint violation after a first write, or by their context ending
// in the middle of a long INSERT (which SQLite answers by rolling back the
// whole transaction). Every acknowledged transaction must have left both its
// rows, every failed one nothing, and every other transaction succeeds.
func TestGroupCommitSavepoints(t *testing.T) {
	t.Parallel()
	st := groupCommitStore(t)
	takeKey(t, st)
	errOwn := errors.New("own failure")
	const writers = 400
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			errs[i] = st.InTx(ctx, func(exec func(string, ...any) error) error {
				if err := exec(`INSERT INTO gc_test (k, v) VALUES ($1, 'first')`, i); err != nil {
					return err
				}
				switch {
				case i%10 == 3:
					return errOwn
				case i%10 == 5:
					return exec(`INSERT INTO gc_test (k, v) VALUES (-1, 'again')`)
				case i%50 == 7:
					time.AfterFunc(5*time.Millisecond, cancel)
					return exec(`INSERT INTO gc_test (k, v)
						WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 50000000)
						SELECT x + 10000000, 'slow' FROM c`)
				}
				return exec(`INSERT INTO gc_test (k, v) VALUES ($1, 'second')`, i+1_000_000)
			})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		checkWhole(t, st, i, err == nil, err)
		if i%10 == 3 && !errors.Is(err, errOwn) {
			t.Errorf("writer %d: %v, want its own error", i, err)
		}
		switch {
		case i%10 == 5 && err == nil:
			t.Errorf("writer %d: the duplicate key was accepted", i)
		case i%50 == 7 && !errors.Is(err, context.Canceled):
			t.Errorf("writer %d: %v, want its context's error", i, err)
		case i%10 != 3 && i%10 != 5 && i%50 != 7 && err != nil:
			// A write that broke the shared transaction costs the others
			// nothing: they run again without it.
			t.Errorf("writer %d failed: %v", i, err)
		}
	}
	checkNoSlowRows(t, st)
}

// TestGroupCommitCancelled: a write whose context has ended, before it is
// submitted or while it waits behind a batch, is answered with the
// context's error and never runs.
func TestGroupCommitCancelled(t *testing.T) {
	t.Parallel()
	st := groupCommitStore(t)
	var ran atomic.Bool
	fn := func(exec func(string, ...any) error) error {
		ran.Store(true)
		return exec(`INSERT INTO gc_test (k, v) VALUES (1, 'cancelled')`)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := st.InTx(ctx, fn); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled before: %v", err)
	}

	started, release := make(chan struct{}), make(chan struct{})
	blocker := make(chan error, 1)
	go func() {
		blocker <- st.InTx(context.Background(), func(exec func(string, ...any) error) error {
			close(started)
			<-release
			return exec(`INSERT INTO gc_test (k, v) VALUES (2, 'blocker')`)
		})
	}()
	<-started
	ctx, cancel = context.WithCancel(context.Background())
	waiting := make(chan error, 1)
	go func() { waiting <- st.InTx(ctx, fn) }()
	waitQueued(t, 1)
	cancel()
	if err := <-waiting; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled while queued: %v", err)
	}
	close(release)
	if err := <-blocker; err != nil {
		t.Fatal(err)
	}
	if ran.Load() || rowsOf(t, st, 1) != 0 || rowsOf(t, st, 2) != 1 {
		t.Fatal("a cancelled write ran")
	}
}

// TestGroupCommitDeadlineWhileLocked: while another connection holds
// SQLite's write lock (an import, a backup), a write's caller is answered
// at its deadline, not after the busy timeout, and its function never
// runs, even once the lock is free.
func TestGroupCommitDeadlineWhileLocked(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "pds.db")
	st := testenv.SQLite.Open(t, path).(*sqlstore.Store)
	if err := st.InTx(context.Background(), func(exec func(string, ...any) error) error {
		return exec(`CREATE TABLE gc_test (k INTEGER PRIMARY KEY, v TEXT NOT NULL)`)
	}); err != nil {
		t.Fatal(err)
	}
	// The other connection waits for the lock should the store's own
	// background work hold it a moment (under load it met SQLITE_BUSY).
	other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(30000)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	lock, err := other.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := lock.ExecContext(context.Background(), `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	var ran atomic.Bool
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	began := time.Now()
	err = st.InTx(ctx, func(exec func(string, ...any) error) error {
		ran.Store(true)
		return exec(`INSERT INTO gc_test (k, v) VALUES (1, 'late')`)
	})
	// The lock is held until after the answer: a write that waited for it
	// would never end. How long past the deadline the answer came depends
	// on the machine, and is bounded only by SQLite's busy timeout (10 s,
	// fifty times the deadline), which a write waiting in SQLite's busy
	// handler rather than at its deadline would reach.
	if took := time.Since(began); !errors.Is(err, context.DeadlineExceeded) || took >= 10*time.Second {
		t.Fatalf("a write behind a held lock: %v after %s, want the deadline's error before the busy timeout", err, took)
	}
	if _, err := lock.ExecContext(context.Background(), `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	// The committer goes on with the next write once the lock is free.
	if err := st.InTx(context.Background(), func(exec func(string, ...any) error) error {
		return exec(`INSERT INTO gc_test (k, v) VALUES (2, 'after')`)
	}); err != nil {
		t.Fatal(err)
	}
	if ran.Load() || rowsOf(t, st, 1) != 0 || rowsOf(t, st, 2) != 1 {
		t.Fatalf("after the lock: the abandoned write ran %v, rows %d and %d", ran.Load(), rowsOf(t, st, 1), rowsOf(t, st, 2))
	}
}

// TestGroupCommitClose: closing the store answers writes submitted after it.
func TestGroupCommitClose(t *testing.T) {
	t.Parallel()
	st := groupCommitStore(t)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	err := st.InTx(context.Background(), func(exec func(string, ...any) error) error { return nil })
	if !errors.Is(err, sqlstore.ErrClosed) {
		t.Fatalf("write after Close: %v", err)
	}
}

// TestGroupCommitAlone mixes transactions that run alone (no savepoint,
// a commit of their own) with shared ones: an alone transaction that fails
// leaves nothing, even rows it wrote before failing, and no other
// transaction is disturbed by it.
func TestGroupCommitAlone(t *testing.T) {
	t.Parallel()
	st := groupCommitStore(t)
	ctx := context.Background()
	errOwn := errors.New("own failure")
	const writers = 200
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			write := func(exec func(string, ...any) error) error {
				if err := exec(`INSERT INTO gc_test (k, v) VALUES ($1, 'a')`, i); err != nil {
					return err
				}
				if err := exec(`INSERT INTO gc_test (k, v) VALUES ($1, 'b')`, i+1_000_000); err != nil {
					return err
				}
				if i%7 == 0 {
					return errOwn
				}
				return nil
			}
			if i%3 == 0 {
				errs[i] = st.InTxAlone(ctx, write)
			} else {
				errs[i] = st.InTx(ctx, write)
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		want := 2
		if i%7 == 0 {
			want = 0
			if !errors.Is(err, errOwn) {
				t.Fatalf("writer %d: %v, want its own error", i, err)
			}
		} else if err != nil {
			t.Fatalf("writer %d: %v", i, err)
		}
		if got := rowsOf(t, st, i); got != want {
			t.Fatalf("writer %d (alone %v): %d rows, want %d", i, i%3 == 0, got, want)
		}
	}
}

// TestGroupCommitAloneTogether runs only transactions that run alone, many
// at once, so that they share commits (runAloneJobs); some fail by their
// own error, some by a constraint violation after a first write. Each must
// keep all of its rows or none, whatever the ones it shared a commit with
// did.
func TestGroupCommitAloneTogether(t *testing.T) {
	t.Parallel()
	st := groupCommitStore(t)
	ctx := context.Background()
	takeKey(t, st)
	errOwn := errors.New("own failure")
	const writers = 300
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			errs[i] = st.InTxAlone(ctx, func(exec func(string, ...any) error) error {
				if err := exec(`INSERT INTO gc_test (k, v) VALUES ($1, 'a')`, i); err != nil {
					return err
				}
				switch i % 10 {
				case 3:
					return errOwn
				case 7:
					return exec(`INSERT INTO gc_test (k, v) VALUES (-1, 'again')`)
				}
				return exec(`INSERT INTO gc_test (k, v) VALUES ($1, 'b')`, i+1_000_000)
			})
		})
	}
	wg.Wait()
	for i, err := range errs {
		want := 2
		switch i % 10 {
		case 3:
			want = 0
			if !errors.Is(err, errOwn) {
				t.Fatalf("writer %d: %v, want its own error", i, err)
			}
		case 7:
			want = 0
			if err == nil {
				t.Fatalf("writer %d: a duplicate key was accepted", i)
			}
		default:
			if err != nil {
				t.Fatalf("writer %d: %v", i, err)
			}
		}
		if got := rowsOf(t, st, i); got != want {
			t.Fatalf("writer %d: %d rows, want %d", i, got, want)
		}
	}
}

// TestGroupCommitOptimisticFailures puts one or two failing writes among
// many in a single batch, which runs first without savepoints: whatever a
// failing write did before failing must be absent, its answer its own, and
// every other write of the batch must commit and be answered nil.
func TestGroupCommitOptimisticFailures(t *testing.T) {
	t.Parallel()
	errOwn := errors.New("own failure")
	const writers = 24
	type outcome struct {
		err      error
		panicked any
		ran      bool
	}
	// Each failure is run by writer i; cancel ends the context of any
	// writer.
	type failure func(i int, exec func(string, ...any) error, cancel func(int)) error
	ownError := func(int, func(string, ...any) error, func(int)) error { return errOwn }
	duplicate := func(_ int, exec func(string, ...any) error, _ func(int)) error {
		return exec(`INSERT INTO gc_test (k, v) VALUES (-1, 'again')`)
	}
	panics := func(int, func(string, ...any) error, func(int)) error { panic("job panicked") }
	// Interrupting a statement makes SQLite roll back the whole
	// transaction, not just the statement.
	interrupted := func(i int, exec func(string, ...any) error, cancel func(int)) error {
		time.AfterFunc(5*time.Millisecond, func() { cancel(i) })
		return exec(`INSERT INTO gc_test (k, v)
			WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 50000000)
			SELECT x + 10000000, 'slow' FROM c`)
	}
	// cancelsNext ends the context of the writer after it, which is then
	// queued or taken into the batch: that writer must not run.
	cancelsNext := func(i int, exec func(string, ...any) error, cancel func(int)) error {
		cancel(i + 1)
		return exec(`INSERT INTO gc_test (k, v) VALUES ($1, 'second')`, i+1_000_000)
	}
	for _, tc := range []struct {
		name     string
		failures map[int]failure
		check    func(t *testing.T, i int, o outcome)
	}{
		{"own error after a write", map[int]failure{7: ownError}, func(t *testing.T, i int, o outcome) {
			if i == 7 && !errors.Is(o.err, errOwn) {
				t.Errorf("writer 7: %v, want its own error", o.err)
			}
		}},
		{"constraint violation after a write", map[int]failure{0: duplicate}, func(t *testing.T, i int, o outcome) {
			if i == 0 && o.err == nil {
				t.Error("writer 0: the duplicate key was accepted")
			}
		}},
		{"last of the batch fails", map[int]failure{writers - 1: ownError}, func(t *testing.T, i int, o outcome) {
			if i == writers-1 && !errors.Is(o.err, errOwn) {
				t.Errorf("writer %d: %v, want its own error", i, o.err)
			}
		}},
		{"panic after a write", map[int]failure{5: panics}, func(t *testing.T, i int, o outcome) {
			if i == 5 && o.panicked != "job panicked" {
				t.Errorf("writer 5: panicked with %v, err %v", o.panicked, o.err)
			}
		}},
		{"interrupted, which breaks the transaction", map[int]failure{9: interrupted}, func(t *testing.T, i int, o outcome) {
			if i == 9 && !errors.Is(o.err, context.Canceled) {
				t.Errorf("writer 9: %v, want its context's error", o.err)
			}
		}},
		{"context ended in the batch", map[int]failure{3: cancelsNext}, func(t *testing.T, i int, o outcome) {
			if i == 4 && (!errors.Is(o.err, context.Canceled) || o.ran) {
				t.Errorf("writer 4: %v (ran %v), want its context's error without running", o.err, o.ran)
			}
		}},
		{"two failures", map[int]failure{2: panics, 11: duplicate}, func(t *testing.T, i int, o outcome) {
			if i == 2 && o.panicked == nil || i == 11 && o.err == nil {
				t.Errorf("writer %d: %v, %v", i, o.err, o.panicked)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := groupCommitStore(t)
			ctx := context.Background()
			takeKey(t, st)
			ctxs := make([]context.Context, writers)
			cancels := make([]context.CancelFunc, writers)
			for i := range ctxs {
				ctxs[i], cancels[i] = context.WithCancel(ctx)
				defer cancels[i]()
			}
			cancel := func(i int) { cancels[i]() }

			// A write holds the committer while the others queue, so that
			// they are taken together into the next batch.
			started, release := make(chan struct{}), make(chan struct{})
			blocker := make(chan error, 1)
			go func() {
				blocker <- st.InTx(ctx, func(exec func(string, ...any) error) error {
					close(started)
					<-release
					return nil
				})
			}()
			<-started
			out := make([]outcome, writers)
			var wg sync.WaitGroup
			for i := range writers {
				wg.Go(func() {
					defer func() { out[i].panicked = recover() }()
					out[i].err = st.InTx(ctxs[i], func(exec func(string, ...any) error) error {
						out[i].ran = true
						if err := exec(`INSERT INTO gc_test (k, v) VALUES ($1, 'first')`, i); err != nil {
							return err
						}
						if f := tc.failures[i]; f != nil {
							return f(i, exec, cancel)
						}
						return exec(`INSERT INTO gc_test (k, v) VALUES ($1, 'second')`, i+1_000_000)
					})
				})
				// Queued in order, so that a writer's successor comes after it.
				waitQueued(t, i+1)
			}
			close(release)
			wg.Wait()
			if err := <-blocker; err != nil {
				t.Fatal(err)
			}
			for i, o := range out {
				tc.check(t, i, o)
				// A writer fails by its own failure, or by the one before it
				// ending its context.
				failed := tc.failures[i] != nil || i > 0 && tc.failures[i-1] != nil && errors.Is(o.err, context.Canceled)
				checkWhole(t, st, i, o.err == nil && o.panicked == nil, []any{o.err, o.panicked})
				if !failed && (o.err != nil || o.panicked != nil) {
					t.Errorf("writer %d failed with the others: %v, %v", i, o.err, o.panicked)
				}
			}
			checkNoSlowRows(t, st)
		})
	}
}

// TestGroupCommitOnce queues functions that must run only once among
// shared and alone transactions that fail, whose failures make the
// committer run the others of their transaction again: each of them must
// run exactly once, and commit.
func TestGroupCommitOnce(t *testing.T) {
	t.Parallel()
	st := groupCommitStore(t)
	ctx := context.Background()
	errOwn := errors.New("own failure")
	const writers = 120
	runs := make([]atomic.Int32, writers)
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			write := func(exec func(string, ...any) error) error {
				runs[i].Add(1)
				if err := exec(`INSERT INTO gc_test (k, v) VALUES ($1, 'a')`, i); err != nil {
					return err
				}
				if i%4 != 0 && i%3 == 0 {
					return errOwn
				}
				return nil
			}
			switch i % 4 {
			case 0:
				errs[i] = st.InTxOnce(ctx, write)
			case 1:
				errs[i] = st.InTxAlone(ctx, write)
			default:
				errs[i] = st.InTx(ctx, write)
			}
		})
	}
	wg.Wait()
	for i := 0; i < writers; i += 4 {
		if errs[i] != nil || runs[i].Load() != 1 || rowsOf(t, st, i) != 1 {
			t.Errorf("writer %d: %v after %d runs, %d rows", i, errs[i], runs[i].Load(), rowsOf(t, st, i))
		}
	}
}
