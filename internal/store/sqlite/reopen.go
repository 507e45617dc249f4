package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
)

// connections opens every connection of one store to its file (the
// readers, the writer, the checkpointer's) and can close them all at once
// and open none until they are: what a restart does, without one.
//
// That is how SQLite recovers its WAL index (the -shm file) when another
// process cut it short under this one. SQLite maps the index in pieces and
// never maps a piece again while any connection of the process holds the
// file, so every transaction of every connection fails
// (SQLITE_IOERR_IN_PAGE) for as long as one stays open. Once none is, the
// next connection finds the index unused, starts it over and rebuilds it
// from the WAL under an exclusive lock, as after a crash; nothing
// acknowledged is lost, since every commit is in the WAL, synced. Growing
// the file back under connections still open instead let a transaction
// begun before the cut read pages through an emptied index and write on
// what it read: "database disk image is malformed".
type connections struct {
	drv driver.Driver
	log *slog.Logger

	// generation counts the resets; a connection of an older one is
	// closed as soon as database/sql hands it back or out.
	generation atomic.Uint64

	mu sync.Mutex
	// open counts the open connections of each generation.
	open map[uint64]int
	// drained is closed when the last connection of an older generation
	// closes; Connect waits for it.
	drained chan struct{}
	// pools are the pools to empty of idle connections at a reset, with
	// the idle connections each keeps; holders let go of the connections
	// they hold for long (the change counter's).
	pools   []pool
	holders []func()
}

type pool struct {
	db   *sql.DB
	idle int
}

func newConnections(log *slog.Logger) (*connections, error) {
	db, err := sql.Open("sqlite", "")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	return &connections{drv: db.Driver(), log: log, open: map[uint64]int{}}, nil
}

// pool opens a pool of connections to dsn that keeps idle of them idle.
func (c *connections) pool(dsn string, maxOpen, idle int) *sql.DB {
	db := sql.OpenDB(connector{c, dsn})
	db.SetMaxOpenConns(maxOpen)
	db.SetMaxIdleConns(idle)
	db.SetConnMaxIdleTime(0)
	c.mu.Lock()
	c.pools = append(c.pools, pool{db, idle})
	c.mu.Unlock()
	return db
}

// holding registers a function that lets go of a connection held outside
// any pool, called at a reset.
func (c *connections) holding(letGo func()) {
	c.mu.Lock()
	c.holders = append(c.holders, letGo)
	c.mu.Unlock()
}

// reset closes every connection as soon as nothing uses it, and opens no
// new one until all are closed. A reset while one is under way does
// nothing.
func (c *connections) reset() {
	c.mu.Lock()
	if c.drained != nil {
		c.mu.Unlock()
		return
	}
	gen := c.generation.Add(1)
	c.drained = make(chan struct{})
	c.checkDrainedLocked()
	pools, holders := c.pools, c.holders
	c.mu.Unlock()
	c.log.Warn("the database's WAL index was cut short by another process: closing every connection, so that SQLite rebuilds it from the WAL",
		"generation", gen)
	for _, h := range holders {
		h()
	}
	for _, p := range pools {
		// Closes the idle connections at once; those in use close as
		// they come back (IsValid).
		p.db.SetMaxIdleConns(0)
		p.db.SetMaxIdleConns(p.idle)
	}
}

// checkDrainedLocked ends the wait of a reset once no connection of an
// older generation is open.
func (c *connections) checkDrainedLocked() {
	if c.drained == nil {
		return
	}
	gen := c.generation.Load()
	for g, n := range c.open {
		if g < gen && n > 0 {
			return
		}
	}
	close(c.drained)
	c.drained = nil
	if gen > 1 || len(c.open) > 0 {
		c.log.Warn("every connection of the older generation is closed; opening new ones", "generation", gen)
	}
}

type connector struct {
	c   *connections
	dsn string
}

func (k connector) Driver() driver.Driver { return k.c.drv }

func (k connector) Connect(ctx context.Context) (driver.Conn, error) {
	c := k.c
	for {
		c.mu.Lock()
		wait := c.drained
		if wait == nil {
			break
		}
		c.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	gen := c.generation.Load()
	c.open[gen]++
	c.mu.Unlock()
	inner, err := c.drv.Open(k.dsn)
	if err != nil {
		c.closed(gen)
		return nil, err
	}
	dc, ok := inner.(driverConn)
	if !ok {
		inner.Close()
		c.closed(gen)
		return nil, errNotDriverConn
	}
	return &conn{driverConn: dc, c: c, gen: gen}, nil
}

func (c *connections) closed(gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open[gen]--; c.open[gen] == 0 {
		delete(c.open, gen)
	}
	c.checkDrainedLocked()
}

// conn is a connection of the driver that knows its generation.
type conn struct {
	driverConn
	c      *connections
	gen    uint64
	closed sync.Once
}

func (c *conn) stale() bool { return c.gen != c.c.generation.Load() }

func (c *conn) Close() error {
	err := c.driverConn.Close()
	c.closed.Do(func() { c.c.closed(c.gen) })
	return err
}

func (c *conn) IsValid() bool {
	return !c.stale() && c.driverConn.IsValid()
}

func (c *conn) ResetSession(ctx context.Context) error {
	if c.stale() {
		return driver.ErrBadConn
	}
	return c.driverConn.ResetSession(ctx)
}

// driverConn is what conn passes on: every interface of the driver's
// connection that database/sql asks for.
type driverConn interface {
	driver.Conn
	driver.Validator
	driver.SessionResetter
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
}

var errNotDriverConn = errors.New("sqlite: the driver's connection lacks an interface database/sql uses")
