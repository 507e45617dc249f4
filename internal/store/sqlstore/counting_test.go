package sqlstore_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/pds-dev/pds/internal/store/postgres"
	sqliteengine "github.com/pds-dev/pds/internal/store/sqlite"
	"github.com/pds-dev/pds/internal/store/sqlstore"
	"github.com/pds-dev/pds/internal/testenv"
)

// These tests open the one store implementation over a driver that counts
// every statement it executes, and keep a handle on the database to do what
// no store method does (seed in bulk, close a burst as the webhook worker
// would).

// counters count executed statements (Exec and Query, not prepares), one
// counter per database: each test opens a database of its own, so tests
// running in parallel do not count each other's statements.
var counters sync.Map // database (see databaseOf) -> *atomic.Int64

// counterFor returns the counter of the database a data source name opens.
func counterFor(dsn string) *atomic.Int64 {
	c, _ := counters.LoadOrStore(databaseOf(dsn), new(atomic.Int64))
	return c.(*atomic.Int64)
}

// databaseOf names the database of a data source name: the file of an
// SQLite "file:" name without its pragmas, else the PostgreSQL URL, whose
// search_path names the test's schema.
func databaseOf(dsn string) string {
	if path, ok := strings.CutPrefix(dsn, "file:"); ok {
		path, _, _ = strings.Cut(path, "?")
		return path
	}
	return dsn
}

var registerCounting = sync.OnceFunc(func() {
	for _, name := range []string{"sqlite", "pgx"} {
		db, err := sql.Open(name, "")
		if err != nil {
			panic(err)
		}
		sql.Register("counting-"+name, countingDriver{db.Driver()})
		db.Close()
	}
})

// rawStore is a store with the database under it.
type rawStore struct {
	*sqlstore.Store
	db         *sql.DB
	dsn        string
	statements *atomic.Int64
}

// openCounting opens a fresh database of the engine through the counting driver.
func openCounting(t testing.TB, eng testenv.Engine) rawStore {
	t.Helper()
	registerCounting()
	ctx := context.Background()
	target := eng.NewDatabase(t)
	var (
		db  *sql.DB
		st  *sqlstore.Store
		err error
	)
	switch eng.Name {
	case "sqlite":
		if err = sqliteengine.Migrate(ctx, target); err != nil {
			t.Fatal(err)
		}
		q := url.Values{}
		q.Add("_pragma", "busy_timeout(10000)")
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "foreign_keys(ON)")
		// As sqlite.Open: savepoints journal to memory, not to a file.
		q.Add("_pragma", "temp_store(MEMORY)")
		q.Set("_txlock", "immediate")
		db, err = sql.Open("counting-sqlite", "file:"+target+"?"+q.Encode())
		db.SetMaxOpenConns(1)
		st = sqlstore.New(sqliteengine.Dialect, db, db, countingIsUnique)
	default:
		if err = postgres.Migrate(ctx, target); err != nil {
			t.Fatal(err)
		}
		db, err = sql.Open("counting-pgx", target)
		// Bounded as postgres.Open bounds its pool: unbounded, a test's
		// hundred concurrent writes opened a connection each and, beside
		// the other packages' tests, ran the server out of connections.
		db.SetMaxOpenConns(8)
		st = sqlstore.New(postgres.Dialect, db, db, countingIsUnique)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return rawStore{Store: st, db: db, dsn: target, statements: counterFor(target)}
}

func countingIsUnique(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	}
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// transactions counts the transactions begun, per database as counters.
var transactions sync.Map

func transactionsFor(dsn string) *atomic.Int64 {
	c, _ := transactions.LoadOrStore(databaseOf(dsn), new(atomic.Int64))
	return c.(*atomic.Int64)
}

// countRoundTrips runs fn and returns how many statements and transactions
// (a BEGIN and its end) it ran on this store's database.
func (rs rawStore) countRoundTrips(fn func()) (statements, transactions int64) {
	tx := transactionsFor(rs.dsn)
	before, txBefore := rs.statements.Load(), tx.Load()
	fn()
	return rs.statements.Load() - before, tx.Load() - txBefore
}

// personUpdates counts the UPDATEs of persons rows, per database as
// counters.
var personUpdates sync.Map

func personUpdatesFor(dsn string) *atomic.Int64 {
	c, _ := personUpdates.LoadOrStore(databaseOf(dsn), new(atomic.Int64))
	return c.(*atomic.Int64)
}

// countPersonUpdates runs fn and returns how many UPDATE statements of
// persons it ran on this store's database.
func (rs rawStore) countPersonUpdates(fn func()) int64 {
	c := personUpdatesFor(rs.dsn)
	before := c.Load()
	fn()
	return c.Load() - before
}

// countStatements runs fn and returns how many statements it executed on
// this store's database.
func (rs rawStore) countStatements(fn func()) int64 {
	before := rs.statements.Load()
	fn()
	return rs.statements.Load() - before
}

type countingDriver struct{ driver.Driver }

func (d countingDriver) Open(name string) (driver.Conn, error) {
	c, err := d.Driver.Open(name)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, name: name, statements: counterFor(name), recorder: recorderFor(name)}, nil
}

type countingConn struct {
	driver.Conn
	name       string
	statements *atomic.Int64
	recorder   *recorder
}

// recorder keeps the queries a database runs, with their arguments, while
// it is on (see recordQueries).
type recorder struct {
	mu      sync.Mutex
	on      bool
	queries []recordedQuery
}

type recordedQuery struct {
	query string
	args  []any
}

var recorders sync.Map // database -> *recorder

func recorderFor(dsn string) *recorder {
	r, _ := recorders.LoadOrStore(databaseOf(dsn), new(recorder))
	return r.(*recorder)
}

func (r *recorder) add(query string, args []driver.NamedValue) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.on {
		return
	}
	vals := make([]any, len(args))
	for i, a := range args {
		vals[i] = a.Value
	}
	r.queries = append(r.queries, recordedQuery{query, vals})
}

// recordQueries runs fn and returns the queries (not other statements) it
// ran on this store's database.
func (rs rawStore) recordQueries(fn func()) []recordedQuery {
	r := recorderFor(rs.dsn)
	r.mu.Lock()
	r.on, r.queries = true, nil
	r.mu.Unlock()
	fn()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on = false
	return r.queries
}

func (c *countingConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *countingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	var (
		st  driver.Stmt
		err error
	)
	if pc, ok := c.Conn.(driver.ConnPrepareContext); ok {
		st, err = pc.PrepareContext(ctx, query)
	} else {
		st, err = c.Conn.Prepare(query)
	}
	if err != nil {
		return nil, err
	}
	cs := &countingStmt{Stmt: st, statements: c.statements, recorder: c.recorder, query: query}
	// An UPDATE of persons runs alone or, on PostgreSQL, as the WITH
	// clause of the statement that also reads the person's outbox row.
	if strings.HasPrefix(query, "UPDATE persons ") || strings.HasPrefix(query, "WITH u AS (UPDATE persons ") {
		cs.personUpdates = personUpdatesFor(c.name)
	}
	return cs, nil
}

func (c *countingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	transactionsFor(c.name).Add(1)
	if b, ok := c.Conn.(driver.ConnBeginTx); ok {
		return b.BeginTx(ctx, opts)
	}
	//lint:ignore SA1019 the fallback database/sql itself uses for a driver without BeginTx
	return c.Conn.Begin()
}

func (c *countingConn) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := c.Conn.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

func (c *countingConn) ResetSession(ctx context.Context) error {
	if r, ok := c.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

type countingStmt struct {
	driver.Stmt
	statements    *atomic.Int64
	personUpdates *atomic.Int64 // set for an UPDATE of persons
	recorder      *recorder
	query         string
}

func (s *countingStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	s.statements.Add(1)
	if s.personUpdates != nil {
		s.personUpdates.Add(1)
	}
	if strings.HasPrefix(s.query, "SELECT set_config(") || strings.HasPrefix(s.query, "UPDATE deliveries ") ||
		strings.HasPrefix(s.query, "DELETE FROM deliveries ") {
		// Planner settings, which the plans of the queries after them
		// depend on, a redelivery, whose update finds its rows as the
		// log's reads do, and the claim's and retention's writes, which
		// find theirs by status (TestHotQueryPlans).
		s.recorder.add(s.query, args)
	}
	if e, ok := s.Stmt.(driver.StmtExecContext); ok {
		return e.ExecContext(ctx, args)
	}
	return nil, errors.New("the driver's statements do not take a context")
}

func (s *countingStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	s.statements.Add(1)
	if s.personUpdates != nil {
		s.personUpdates.Add(1)
	}
	s.recorder.add(s.query, args)
	if q, ok := s.Stmt.(driver.StmtQueryContext); ok {
		return q.QueryContext(ctx, args)
	}
	return nil, errors.New("the driver's statements do not take a context")
}
