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
func TestWALStartsOverWhileWritesGoOn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	path := filepath.Join(t.TempDir(), "pds.db")
	st, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var onWriter atomic.Int64
	cdb, err := sql.Open("sqlite", dsn(path, false, busyTimeout))
	if err != nil {
		t.Fatal(err)
	}
	cdb.SetMaxOpenConns(1)
	c := startCheckpointer(cdb, nil, func(ctx context.Context, fn func(context.Context, *sql.DB) error) error {
		onWriter.Add(1)
		return st.(*sqlstore.Store).BetweenWrites(ctx, fn)
	}, nil)
	c.stop.Do(func() { close(c.quit) })
	<-c.done
	defer c.db.Close()
	c.restartFrames = 300

	var acknowledged atomic.Int64
	write := func() error {
		err := st.CreateAccount(ctx, domain.Account{ID: domain.NewID("acc"), Name: "filler", CreatedAt: time.Now().UTC()})
		if err == nil {
			acknowledged.Add(1)
		}
		return err
	}
	// A PASSIVE checkpoint that copies the whole WAL lets the next write
	// start it over, so the WAL is filled first and checked after.
	for range 400 {
		if err := write(); err != nil {
			t.Fatal(err)
		}
	}
	before, err := c.run(ctx, c.db, "PASSIVE")
	if err != nil {
		t.Fatal(err)
	}
	if before.frames < c.restartFrames {
		t.Fatalf("the WAL holds %d frames after 400 commits, want more than %d", before.frames, c.restartFrames)
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
					t.Error(err)
					return
				}
			}
		})
	}
	// The store's own checkpointer runs beside this one (a PASSIVE every
	// second) and may copy the whole WAL in a pause between commits, after
	// which the next commit starts it over by itself: the checkpoint is run
	// until one finds the WAL past restartFrames and restarts it, for as
	// long as the test's deadline allows: how many tries that takes
	// depends on the machine's other work.
	var restartedAt, after walState
	restartedAt.frames = -1
	for ctx.Err() == nil {
		calls := onWriter.Load()
		got, err := c.checkpoint(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if onWriter.Load() == calls {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		restartedAt = got
		// A few commits after the restart: the WAL holds only those.
		for n := acknowledged.Load(); acknowledged.Load() < n+5 && ctx.Err() == nil; {
			time.Sleep(time.Millisecond)
		}
		if after, err = c.run(ctx, c.db, "PASSIVE"); err != nil {
			t.Fatal(err)
		}
		break
	}
	close(stop)
	wg.Wait()
	switch {
	case restartedAt.frames < 0:
		t.Error("no checkpoint ran a RESTART on the writer's connection")
	case after.frames >= c.restartFrames:
		t.Errorf("the WAL holds %d frames a few commits after a RESTART (%d frames then): it did not start over", after.frames, restartedAt.frames)
	}
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
