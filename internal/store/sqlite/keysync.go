package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/pds-dev/pds/internal/store/sqlstore"
)

// changeCounter is SQLite's sqlstore.KeySync. Every change to a key bumps
// the one row of key_changes in the same transaction (triggers, migration
// 00021), whichever process makes it, and a Sync reads it: a read
// transaction that starts after a change committed sees it, so when the
// count moved the cache is emptied before the key is looked up.
//
// The same read takes PRAGMA data_version, which moves whenever another
// connection (this process's writer, or any other process) committed
// anything since the last read on this connection; when it moved, the
// person cache is emptied (see sqlstore.personCache). That is why the
// counter is read on a connection of its own, held for the store's life.
//
// Concurrent requests share reads (sqlstore.SharedRead), as PostgreSQL's
// key caches share their round trips: under load a read answers every
// request that came in while the last one ran, instead of each request
// paying a read transaction of its own, a noticeable part of a Get
// Person's CPU.
type changeCounter struct {
	st    *sqlstore.Store
	r     *sql.DB
	reads *sqlstore.SharedRead
	// held is the connection the counter is read on, and its statement;
	// nil from a reset of the store's connections (letGo) to the next read.
	heldMu sync.Mutex
	held   *heldRead
	// wal is the database's WAL index, whose header says whether anything
	// was committed since the last read (nil: unavailable, read every time).
	wal *walIndex

	mu      sync.Mutex
	seen    int64
	version int64 // data_version at the last read
	// before is the WAL index's header as it was just before the last read
	// began; fresh says it was read whole.
	before walHeader
	fresh  bool
	// counted counts the reads of the counter, for tests.
	counted atomic.Int64
}

// heldRead is a connection held for the counter's reads, and the read.
type heldRead struct {
	conn *sql.Conn
	read *sql.Stmt
}

func holdRead(ctx context.Context, r *sql.DB) (*heldRead, error) {
	conn, err := r.Conn(ctx)
	if err != nil {
		return nil, err
	}
	read, err := conn.PrepareContext(ctx, `SELECT n, (SELECT data_version FROM pragma_data_version) FROM key_changes WHERE id = 1`)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return &heldRead{conn, read}, nil
}

func (h *heldRead) close() error { return errors.Join(h.read.Close(), h.conn.Close()) }

func newChangeCounter(ctx context.Context, st *sqlstore.Store, r *sql.DB, path string) (*changeCounter, error) {
	held, err := holdRead(ctx, r)
	if err != nil {
		return nil, err
	}
	c := &changeCounter{st: st, r: r, held: held, wal: openWALIndex(path)}
	c.reads = sqlstore.NewSharedRead(c.readCounter, 0)
	return c, nil
}

// letGo closes the connection the counter is read on (connections.reset);
// the next read holds another.
func (c *changeCounter) letGo() {
	c.heldMu.Lock()
	defer c.heldMu.Unlock()
	if c.held != nil {
		_ = c.held.close()
		c.held = nil
	}
}

// Sync returns once a read of the counter that started after it was
// called has emptied the cache if the counter moved, or at once when
// nothing at all was committed since the last read began: that read is as
// good as one that starts now. Under a load of reads the counter's read,
// made read after read, took a large share of Get Person's time in the
// handler.
func (c *changeCounter) Sync(ctx context.Context) error {
	if h, ok := c.wal.header(); ok {
		c.mu.Lock()
		unchanged := c.fresh && h == c.before
		c.mu.Unlock()
		if unchanged {
			return nil
		}
	}
	return c.reads.Wait(ctx)
}

// readCounter reads the counter and data_version, and empties the key
// cache when the count moved, the person cache when anything was
// committed. Reads never overlap, so a later read never sees an older
// count.
func (c *changeCounter) readCounter(ctx context.Context) error {
	c.heldMu.Lock()
	defer c.heldMu.Unlock()
	// A connection held anew counts data_version from a number of its
	// own: nothing read on the one before tells what it missed.
	anew := c.held == nil
	if anew {
		held, err := holdRead(ctx, c.r)
		if err != nil {
			return err
		}
		c.held = held
	}
	before, whole := c.wal.header()
	c.counted.Add(1)
	var n, version int64
	if err := c.held.read.QueryRowContext(ctx).Scan(&n, &version); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.before, c.fresh = before, whole
	if n != c.seen || anew {
		c.seen = n
		c.st.ForgetKeys()
	}
	if version != c.version || anew {
		c.version = version
		c.st.ForgetPersons()
	}
	return nil
}

// Close closes the counter's connection; the WAL index is let go of
// after every connection of the store (walIndex.Close).
func (c *changeCounter) Close() error {
	c.heldMu.Lock()
	defer c.heldMu.Unlock()
	if c.held == nil {
		return nil
	}
	err := c.held.close()
	c.held = nil
	return err
}
