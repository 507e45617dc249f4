package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store/sqlstore"
)

// TestWriterLeavesCheckpointsToTheCheckpointer: commits past SQLite's
// default threshold of 1,000 pages stay in the WAL until the checkpointer
// copies them, and a WAL past restartFrames starts over on the next write.
func TestWriterLeavesCheckpointsToTheCheckpointer(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "pds.db")
	w, err := sql.Open("sqlite", dsn(path, false, busyTimeout))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.SetMaxOpenConns(1)
	// Stopped at once: the test alone runs its checkpoints, between its
	// own writes.
	cdb, err := sql.Open("sqlite", dsn(path, false, busyTimeout))
	if err != nil {
		t.Fatal(err)
	}
	cdb.SetMaxOpenConns(1)
	c := startCheckpointer(cdb, nil, func(ctx context.Context, fn func(context.Context, *sql.DB) error) error {
		return fn(ctx, w)
	}, nil)
	c.stop.Do(func() { close(c.quit) })
	<-c.done
	defer c.db.Close()
	if _, err := w.ExecContext(ctx, `CREATE TABLE filler (b BLOB)`); err != nil {
		t.Fatal(err)
	}
	fill := func(commits int) {
		t.Helper()
		for range commits {
			// About three pages a commit.
			if _, err := w.ExecContext(ctx, `INSERT INTO filler VALUES (?)`, []byte(strings.Repeat("x", 10000))); err != nil {
				t.Fatal(err)
			}
		}
	}
	fill(600)

	c.restartFrames = 1 << 30
	got, err := c.run(ctx, c.db, "PASSIVE")
	if err != nil {
		t.Fatal(err)
	}
	if got.frames < 1500 {
		t.Fatalf("the WAL holds %d frames after 600 commits of three pages: the writer checkpointed on its own", got.frames)
	}
	fill(1)
	got, err = c.checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.copied != got.frames {
		t.Fatalf("checkpoint copied %d of %d frames with nothing else running", got.copied, got.frames)
	}

	c.restartFrames = 1000
	if _, err := c.checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	fill(1)
	got, err = c.run(ctx, c.db, "PASSIVE")
	if err != nil {
		t.Fatal(err)
	}
	if got.frames > 10 {
		t.Fatalf("the WAL holds %d frames after a restart and one commit, want it started over", got.frames)
	}
}

// TestWALStartsOverWhileWritesGoOn: with a store's writer committing
// without a pause, a checkpoint of a WAL past restartFrames runs its
// RESTART between two of the writer's transactions and the WAL starts
// over, while every write goes on and is kept.
//
// Nothing here counts tries or sleeps: each step waits for what the WAL
// index's header says (the WAL past restartFrames, then started over),
// which the writers read after each of their commits, within the test's
// one deadline.
func TestWALStartsOverWhileWritesGoOn(t *testing.T) {
	// Under -race on a busy machine the test takes a long while: the
	// deadline is for a test that would never end, not for a slow one.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	path := filepath.Join(t.TempDir(), "pds.db")
	st, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	wal := openWALIndex(path)
	if wal == nil {
		t.Fatal("no WAL index")
	}
	defer wal.Close()
	// restartedAt is the WAL's length when the test's RESTART ended, read
	// on the writer's connection before its next transaction (0: none ran
	// yet).
	var restartedAt atomic.Int64
	cdb, err := sql.Open("sqlite", dsn(path, false, busyTimeout))
	if err != nil {
		t.Fatal(err)
	}
	cdb.SetMaxOpenConns(1)
	c := startCheckpointer(cdb, nil, func(ctx context.Context, fn func(context.Context, *sql.DB) error) error {
		return st.(*sqlstore.Store).BetweenWrites(ctx, func(ctx context.Context, w *sql.DB) error {
			if err := fn(ctx, w); err != nil {
				return err
			}
			// A RESTART leaves the header's length as it was: the next
			// commit starts the WAL over.
			if n, ok := wal.frames(); ok && n > 0 {
				restartedAt.Store(int64(n))
			}
			return nil
		})
	}, nil)
	c.stop.Do(func() { close(c.quit) })
	<-c.done
	defer c.db.Close()
	c.restartFrames = 300

	// long is sent to when a writer finds the WAL past restartFrames after
	// its commit, startedOver when one finds it shorter than at the
	// RESTART.
	long := make(chan struct{}, 1)
	startedOver := make(chan int, 1)
	var acknowledged atomic.Int64
	write := func() error {
		err := st.CreateAccount(ctx, domain.Account{ID: domain.NewID("acc"), Name: "filler", CreatedAt: time.Now().UTC()})
		if err != nil {
			return err
		}
		acknowledged.Add(1)
		// The RESTART's length first: a length read after it is the WAL's
		// since the RESTART.
		at := restartedAt.Load()
		n, ok := wal.frames()
		switch {
		case !ok:
		case at > 0 && int64(n) < at:
			select {
			case startedOver <- n:
			default:
			}
		case at == 0 && n >= c.restartFrames:
			select {
			case long <- struct{}{}:
			default:
			}
		}
		return nil
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := write(); err != nil {
					if ctx.Err() == nil {
						t.Error(err)
					}
					return
				}
			}
		})
	}
	halt := sync.OnceFunc(func() {
		close(stop)
		wg.Wait()
	})
	defer halt()
	// The store's own checkpointer runs beside this one (a PASSIVE every
	// second) and may copy the whole WAL in a pause between commits, after
	// which the next commit starts it over by itself, so that the WAL a
	// writer found long may be short again when the checkpoint looks: it
	// then waits for the WAL to be long again.
	for restartedAt.Load() == 0 {
		select {
		case <-long:
		case <-ctx.Done():
			t.Fatal("the WAL never held restartFrames frames while the test's checkpoint could look, nor did a checkpoint run a RESTART on the writer's connection")
		}
		if _, err := c.checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case n := <-startedOver:
		t.Logf("the WAL held %d frames at the RESTART, %d after a commit that followed", restartedAt.Load(), n)
	case <-ctx.Done():
		t.Fatalf("the WAL held %d frames at the RESTART and never fewer after it: it did not start over", restartedAt.Load())
	}
	halt()
	accounts, err := st.ListAccounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := int64(len(accounts)); got < acknowledged.Load() {
		t.Errorf("%d accounts kept of %d acknowledged", got, acknowledged.Load())
	}
}

// TestCheckpointerWatchesTheWALsLength: a WAL that passes restartFrames
// between two ticks is started over without waiting for the next one: the
// checkpointer watches its length in the WAL index's header.
func TestCheckpointerWatchesTheWALsLength(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	path := filepath.Join(t.TempDir(), "pds.db")
	w, err := sql.Open("sqlite", dsn(path, false, busyTimeout))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.SetMaxOpenConns(1)
	if _, err := w.ExecContext(ctx, `CREATE TABLE filler (b BLOB)`); err != nil {
		t.Fatal(err)
	}
	wal := openWALIndex(path)
	if wal == nil {
		t.Fatal("no WAL index")
	}
	defer wal.Close()
	cdb, err := sql.Open("sqlite", dsn(path, false, busyTimeout))
	if err != nil {
		t.Fatal(err)
	}
	cdb.SetMaxOpenConns(1)
	// The only checkpointer, and its tick an hour away.
	c := startCheckpointerEvery(cdb, wal, func(ctx context.Context, fn func(context.Context, *sql.DB) error) error {
		return fn(ctx, w)
	}, nil, time.Hour, 300)
	defer c.Close()
	for i := 0; ; i++ {
		if _, err := w.ExecContext(ctx, `INSERT INTO filler VALUES (?)`, []byte(strings.Repeat("x", 5000))); err != nil {
			t.Fatal(err)
		}
		n, ok := wal.frames()
		if ok && i > 300 && n < 300 {
			// Past restartFrames (a commit writes two pages or more)
			// and started over since.
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("the WAL holds %d frames after %d commits, with restartFrames 300 and no tick", n, i)
		}
	}
}
