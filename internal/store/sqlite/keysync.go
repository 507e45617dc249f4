package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"

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
// Concurrent requests share reads, as PostgreSQL's keyWatch shares round
// trips: a request that finds no read under way reads the counter itself;
// one that finds a read under way waits for the next read, which starts
// only once that one has ended, so after the request arrived. Under load a
// read answers every request that came in while the last one ran, instead
// of each request paying a read transaction of its own (a tenth of a Get
// Person's CPU).
type changeCounter struct {
	st   *sqlstore.Store
	conn *sql.Conn
	read *sql.Stmt

	mu      sync.Mutex
	seen    int64
	version int64         // data_version at the last read
	reading bool          // a read is under way
	next    *counterRound // the read that requests arriving now wait for
}

// counterRound is one read of the counter, shared by the requests that
// arrived before it started.
type counterRound struct {
	done chan struct{}
	err  error
}

func newChangeCounter(ctx context.Context, st *sqlstore.Store, r *sql.DB) (*changeCounter, error) {
	conn, err := r.Conn(ctx)
	if err != nil {
		return nil, err
	}
	read, err := conn.PrepareContext(ctx, `SELECT n, (SELECT data_version FROM pragma_data_version) FROM key_changes WHERE id = 1`)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return &changeCounter{st: st, conn: conn, read: read}, nil
}

// Sync returns once a read of the counter that started after it was
// called has emptied the cache if the counter moved.
func (c *changeCounter) Sync(ctx context.Context) error {
	c.mu.Lock()
	if !c.reading {
		c.reading = true
		c.mu.Unlock()
		err := c.readCounter(ctx)
		if r := c.takeNext(); r != nil {
			go c.serve(r)
		}
		return err
	}
	r := c.next
	if r == nil {
		r = &counterRound{done: make(chan struct{})}
		c.next = r
	}
	c.mu.Unlock()
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// serve runs r and every read requested while it ran, until none is.
func (c *changeCounter) serve(r *counterRound) {
	for r != nil {
		// No single waiter's context may cut a read that others wait for.
		r.err = c.readCounter(context.Background())
		close(r.done)
		r = c.takeNext()
	}
}

// takeNext returns the read requested meanwhile, or nil after marking
// that no read is under way.
func (c *changeCounter) takeNext() *counterRound {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.next
	c.next = nil
	if r == nil {
		c.reading = false
	}
	return r
}

// readCounter reads the counter and data_version, and empties the key
// cache when the count moved, the person cache when anything was
// committed. Reads never overlap, so a later read never sees an older
// count.
func (c *changeCounter) readCounter(ctx context.Context) error {
	var n, version int64
	if err := c.read.QueryRowContext(ctx).Scan(&n, &version); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n != c.seen {
		c.seen = n
		c.st.ForgetKeys()
	}
	if version != c.version {
		c.version = version
		c.st.ForgetPersons()
	}
	return nil
}

func (c *changeCounter) Close() error { return errors.Join(c.read.Close(), c.conn.Close()) }
