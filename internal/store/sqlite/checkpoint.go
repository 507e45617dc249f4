package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"
)

// Checkpoints copy committed pages from the WAL into the database file. By
// default SQLite runs one inside the COMMIT that takes the WAL past 1,000
// pages, on the connection that committed: with one writer connection, every
// write queued behind that commit waits while a few megabytes are copied and
// the database file is synced. The writer therefore never checkpoints
// (wal_autocheckpoint(0) in its DSN) and a connection of its own does it in
// the background:
//
//   - PASSIVE checkpoints run beside the writer and its readers, never
//     waiting for either; each copies what was committed since the last one.
//   - A WAL that keeps receiving commits is never wholly copied at the
//     moment the writer begins, so SQLite never starts writing it from its
//     beginning again and it would grow for as long as the load lasts. Past
//     restartFrames, a RESTART checkpoint waits for the writer to pause,
//     copies the little the last PASSIVE one left and has the next write
//     start the WAL over.
//
// Durability does not depend on checkpoints: a commit is synced in the WAL
// before it is acknowledged (synchronous=FULL), and SQLite recovers the WAL
// into the database after a crash.
//
// Each checkpoint ends by syncing the database file, and a commit waiting
// on its WAL sync behind that one is a slow write: at 10 a second (every
// 100 ms), on a 1M-person SQLite file, the p99 of a sequential Append
// Breadcrumb was 9.1 ms against 4.1 ms at one a second (medians of three
// interleaved pairs), with the p50 unchanged.
const (
	checkpointEvery  = time.Second
	walRestartFrames = 16384 // 64 MiB of 4 KiB pages
)

type checkpointer struct {
	db *sql.DB
	// restartFrames is walRestartFrames but in tests.
	restartFrames int
	quit          chan struct{}
	done          chan struct{}
	stop          sync.Once
}

// startCheckpointer opens the checkpoint connection of the file at path and
// checkpoints every checkpointEvery until close.
func startCheckpointer(path string) (*checkpointer, error) {
	db, err := sql.Open("sqlite", dsn(path, false, busyTimeout))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetConnMaxIdleTime(0)
	c := &checkpointer{db: db, restartFrames: walRestartFrames, quit: make(chan struct{}), done: make(chan struct{})}
	go c.loop()
	return c, nil
}

func (c *checkpointer) loop() {
	defer close(c.done)
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	for {
		select {
		case <-c.quit:
			return
		case <-t.C:
			// An error (a busy database file, say) is retried on the next
			// tick: what a checkpoint does not copy stays in the WAL.
			_, _ = c.checkpoint(context.Background())
		}
	}
}

// walState is what a checkpoint reports: the frames in the WAL and how many
// of them are in the database file now.
type walState struct{ frames, copied int }

// checkpoint copies what it can without waiting, and restarts the WAL when
// it has grown past restartFrames.
func (c *checkpointer) checkpoint(ctx context.Context) (walState, error) {
	st, err := c.run(ctx, "PASSIVE")
	if err != nil || st.frames < c.restartFrames {
		return st, err
	}
	return c.run(ctx, "RESTART")
}

func (c *checkpointer) run(ctx context.Context, mode string) (walState, error) {
	var busy int
	var st walState
	err := c.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint("+mode+")").Scan(&busy, &st.frames, &st.copied)
	if err != nil {
		return st, fmt.Errorf("sqlite: %s checkpoint: %w", mode, err)
	}
	return st, nil
}

func (c *checkpointer) Close() error {
	c.stop.Do(func() { close(c.quit) })
	<-c.done
	return c.db.Close()
}
