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
// Concurrent requests share reads (sqlstore.SharedRead), as PostgreSQL's
// key caches share their round trips: under load a read answers every
// request that came in while the last one ran, instead of each request
// paying a read transaction of its own (a tenth of a Get Person's CPU).
type changeCounter struct {
	st    *sqlstore.Store
	conn  *sql.Conn
	read  *sql.Stmt
	reads *sqlstore.SharedRead

	mu      sync.Mutex
	seen    int64
	version int64 // data_version at the last read
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
	c := &changeCounter{st: st, conn: conn, read: read}
	c.reads = sqlstore.NewSharedRead(c.readCounter, 0)
	return c, nil
}

// Sync returns once a read of the counter that started after it was
// called has emptied the cache if the counter moved.
func (c *changeCounter) Sync(ctx context.Context) error { return c.reads.Wait(ctx) }

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
