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
//     One runs every checkpointEvery.
//   - A WAL that keeps receiving commits is never wholly copied at the
//     moment the writer begins, so SQLite never starts writing it from its
//     beginning again and it would grow for as long as the load lasts. Past
//     restartFrames, PASSIVE checkpoints follow each other until one finds
//     little new (catchUpFrames), and then a RESTART checkpoint copies that
//     little and has the next write start the WAL over.
//   - The WAL's length is watched every watchEvery through the WAL index's
//     header, which every commit rewrites (walIndex.frames, a read of
//     shared memory), so that a burst of writes starts the catch-up as soon
//     as it passes restartFrames rather than at the next tick: under many
//     writers the WAL grows fast, and looked at only once a tick it grew to
//     several times restartFrames before each restart.
//
// The RESTART holds the write lock while it copies and syncs, so it runs on
// the writer's own connection, between two of its transactions
// (sqlstore.Store.BetweenWrites), right after the PASSIVE ones caught up:
// run on the checkpointer's connection, it waited in SQLite's busy handler
// for a moment when the writer held no transaction, while the WAL grew as
// much again.
//
// A WAL that grew long anyway (a read transaction of minutes, an export,
// keeps every frame after its snapshot from being copied) is cut back to
// walSizeLimit when it starts over (journal_size_limit), so the file does
// not keep the size of its longest excursion.
//
// Durability does not depend on checkpoints: a commit is synced in the WAL
// before it is acknowledged (synchronous=FULL), and SQLite recovers the WAL
// into the database after a crash. Each checkpoint ends by syncing the
// database file, and a commit waiting on its WAL sync behind that one is a
// slow write, which is why the PASSIVE ones are not run more often.
const (
	checkpointEvery  = time.Second
	watchEvery       = 50 * time.Millisecond
	walRestartFrames = 8192 // 32 MiB of 4 KiB pages
	// walSizeLimit is journal_size_limit: above restartFrames and the
	// frames a catch-up lets in, so that a WAL of the usual length is
	// not cut and grown again at every restart.
	walSizeLimit = 48 << 20
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
	// wal is the WAL index whose header gives the WAL's length between
	// ticks (nil: every tick checks, through a checkpoint).
	wal *walIndex
	// onWriter runs the RESTART checkpoints.
	onWriter betweenWrites
	// cutShort is called when a checkpoint found the WAL index cut short
	// by another process (connections.reset): the store recovers within a
	// tick, without waiting for a request to meet it.
	cutShort func()
	// every and restartFrames are checkpointEvery and walRestartFrames
	// but in tests.
	every         time.Duration
	restartFrames int
	quit          chan struct{}
	done          chan struct{}
	stop          sync.Once
}

// startCheckpointer checkpoints on db, a pool of one connection to the
// file, every checkpointEvery until close, restarting the WAL on the
// writer's connection through onWriter.
func startCheckpointer(db *sql.DB, wal *walIndex, onWriter betweenWrites, cutShort func()) *checkpointer {
	return startCheckpointerEvery(db, wal, onWriter, cutShort, checkpointEvery, walRestartFrames)
}

func startCheckpointerEvery(db *sql.DB, wal *walIndex, onWriter betweenWrites, cutShort func(), every time.Duration, restartFrames int) *checkpointer {
	c := &checkpointer{db: db, wal: wal, onWriter: onWriter, cutShort: cutShort, every: every, restartFrames: restartFrames,
		quit: make(chan struct{}), done: make(chan struct{})}
	go c.loop()
	return c
}

func (c *checkpointer) loop() {
	defer close(c.done)
	watch := time.NewTicker(watchEvery)
	defer watch.Stop()
	last := time.Now()
	for {
		select {
		case <-c.quit:
			return
		case now := <-watch.C:
			if now.Sub(last) < c.every && !c.walLong() {
				continue
			}
			last = now
			// An error (a busy database file, say) is retried on the next
			// tick: what a checkpoint does not copy stays in the WAL.
			if _, err := c.checkpoint(context.Background()); walIndexCutShort(err) && c.cutShort != nil {
				c.cutShort()
			}
		}
	}
}

// walLong says whether the WAL index's header counts restartFrames frames
// or more in the WAL.
func (c *checkpointer) walLong() bool {
	n, ok := c.wal.frames()
	return ok && n >= c.restartFrames
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
