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
// the database file is synced. The writer therefore never checkpoints on its
// own (wal_autocheckpoint(0) in its DSN) and a connection of its own does it
// in the background:
//
//   - PASSIVE checkpoints run beside the writer and its readers, never
//     waiting for either; each copies what was committed since the last one.
//   - A WAL that keeps receiving commits is never wholly copied at the
//     moment the writer begins, so SQLite never starts writing it from its
//     beginning again and it would grow for as long as the load lasts. Past
//     restartFrames, PASSIVE checkpoints follow each other until one finds
//     little new (catchUpFrames), and then a RESTART checkpoint copies that
//     little and has the next write start the WAL over.
//
// The RESTART holds the write lock while it copies and syncs, so it runs on
// the writer's own connection, between two of its transactions
// (sqlstore.Store.BetweenWrites), right after the PASSIVE ones caught up.
// Run on the checkpointer's connection, it waited (SQLite's busy handler,
// sleeping up to 100 ms between tries) for a moment when the writer held no
// transaction, which under steady writes came seconds later; by then the
// WAL had grown as much again, and the writes queued behind the checkpoint
// while it copied and synced all of that. On a 1M-person file with 32
// connections appending breadcrumbs, those RESTARTs took 0.3-2.9 s with
// 50,000-117,000 frames in the WAL, and the appends' p99 was 198-301 ms;
// after one PASSIVE only, the writer's RESTART still took 92-217 ms (the
// sync behind the PASSIVE's large copy); after the catch-up, 5-25 ms, and
// the p99 was 54-73 ms (pdsbench row 8, in turns).
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
	// catchUpFrames: a PASSIVE checkpoint that found fewer new frames
	// than this has caught up; catchUpRounds bounds the PASSIVE ones
	// before a RESTART.
	catchUpFrames = 256
	catchUpRounds = 4
)

// betweenWrites runs a function on the writer's connection between two of
// its transactions (sqlstore.Store.BetweenWrites).
type betweenWrites func(context.Context, func(context.Context, *sql.DB) error) error

type checkpointer struct {
	db *sql.DB
	// onWriter runs the RESTART checkpoints.
	onWriter betweenWrites
	// cutShort is called when a checkpoint found the WAL index cut short
	// by another process (connections.reset): the store recovers within a
	// tick, without waiting for a request to meet it.
	cutShort func()
	// restartFrames is walRestartFrames but in tests.
	restartFrames int
	quit          chan struct{}
	done          chan struct{}
	stop          sync.Once
}

// startCheckpointer checkpoints on db, a pool of one connection to the
// file, every checkpointEvery until close, restarting the WAL on the
// writer's connection through onWriter.
func startCheckpointer(db *sql.DB, onWriter betweenWrites, cutShort func()) *checkpointer {
	c := &checkpointer{db: db, onWriter: onWriter, cutShort: cutShort, restartFrames: walRestartFrames,
		quit: make(chan struct{}), done: make(chan struct{})}
	go c.loop()
	return c
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
			if _, err := c.checkpoint(context.Background()); walIndexCutShort(err) && c.cutShort != nil {
				c.cutShort()
			}
		}
	}
}

// walState is what a checkpoint reports: the frames in the WAL and how many
// of them are in the database file now.
type walState struct{ frames, copied int }

// checkpoint copies what it can without waiting, and restarts the WAL when
// it has grown past restartFrames.
func (c *checkpointer) checkpoint(ctx context.Context) (walState, error) {
	st, err := c.run(ctx, c.db, "PASSIVE")
	if err != nil || st.frames < c.restartFrames {
		return st, err
	}
	for range catchUpRounds {
		before := st.frames
		if st, err = c.run(ctx, c.db, "PASSIVE"); err != nil {
			return st, err
		}
		if st.frames-before < catchUpFrames {
			break
		}
	}
	// The writer's connection has no busy timeout: should a reader still
	// read an older part of the WAL, the RESTART copies what it can and
	// returns, and a later tick tries again.
	err = c.onWriter(ctx, func(ctx context.Context, w *sql.DB) (err error) {
		st, err = c.run(ctx, w, "RESTART")
		return err
	})
	return st, err
}

// run runs a checkpoint of mode on db.
func (c *checkpointer) run(ctx context.Context, db *sql.DB, mode string) (walState, error) {
	var busy int
	var st walState
	err := db.QueryRowContext(ctx, "PRAGMA wal_checkpoint("+mode+")").Scan(&busy, &st.frames, &st.copied)
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
