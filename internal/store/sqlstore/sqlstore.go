// Package sqlstore implements store.Store once, over database/sql, for every
// engine. SQL that is the same on every engine lives here, written with
// numbered placeholders ($1, $2, ...) that SQLite and PostgreSQL both read.
// What must differ is declared by each engine package in its Dialect.
package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/secrets"
)

// Dialect is the SQL an engine writes its own way; each engine package
// declares one (sqlite.Dialect, postgres.Dialect). Engines are never told
// apart by name: a query that differs takes its text from here.
type Dialect struct {
	// Name names the engine in logs and in Engine(); no SQL depends on it.
	Name string
	// LockRows ends a SELECT inside a write transaction whose rows the
	// transaction goes on to change, so a concurrent writer waits for it.
	LockRows string
	// ShareRows ends a SELECT whose rows must not change until the
	// transaction ends, without blocking other readers.
	ShareRows string
	// ClaimRows ends the subquery that picks due jobs to lease, so
	// concurrent claimers pass over each other's rows.
	ClaimRows string
	// ClaimDeliveryRows is ClaimRows for the deliveries d of a join.
	ClaimDeliveryRows string
	// InsertParams bounds the parameters of one multi-row INSERT of an
	// import: PostgreSQL pays a round trip per statement, so its statements
	// are long.
	InsertParams int
	// Unprepared runs every statement by its text, never through a
	// database/sql prepared statement (PostgreSQL): a prepared statement is
	// named on one server connection, which a transaction-mode pooler
	// (PgBouncer) gives to another client once the transaction ends. The
	// driver caches each statement's description instead, per connection,
	// without naming it on the server (pgx's QueryExecModeCacheDescribe).
	Unprepared bool
	// BareParams prepares every statement with its numbered parameters
	// written as anonymous ones (bareparams.go): SQLite binds each named
	// parameter ($1) after a walk of the statement's list of names, so
	// binding n of them costs n², anonymous ones cost n.
	BareParams bool
	// EraseChunk, when set, bounds the breadcrumbs one transaction of an
	// erasure deletes (SQLite: a transaction holds the one write lock, and
	// a chunk holds it no longer than a group commit's batch); zero erases
	// a person in one transaction whatever it holds (see erasures.go).
	EraseChunk int
	// AnalyzeDuringImport refreshes the planner's statistics of persons as
	// an import grows the table (see analyzePersons).
	AnalyzeDuringImport bool
	// AnalyzeTables, followed by a list of tables, refreshes the planner's
	// statistics of those tables; an import runs it once it has committed
	// (see analyzeTables). Empty where the planner takes nothing from a
	// bulk write.
	AnalyzeTables string
	// TagPairsAgg aggregates a person's live tags (pt, t) as a JSON array
	// of [id, name] pairs ordered by pt.created_at, t.id; FieldValuesAgg
	// its custom field values (f, v) as a JSON object of key to value. Get
	// Person reads both in its one statement (see personWithDetailsSQL).
	TagPairsAgg, FieldValuesAgg string
	// GroupCommit runs the write transactions of concurrent callers
	// together, each in a savepoint, under one commit (see committer): for
	// an engine whose writes take turns on one connection anyway, so that
	// they share the wait for the disk. An engine whose writers run in
	// parallel keeps one transaction per call.
	GroupCommit bool
	// ModifyingCTE says a WITH clause may insert or delete rows and hand
	// them to the statement it heads (PostgreSQL), which lets the timeline
	// fold take exactly the deltas it counts while writers run alongside,
	// and a new person's upsert look up, insert and enter the outbox in one
	// statement (createUnlessHeld) where a round trip costs the most.
	ModifyingCTE bool
	// RowVersion is a column that changes with every write of its row
	// (PostgreSQL's xmin), read as text, and RefuseStale an expression that
	// fails its statement with SQLSTATE staleState. With both, a matched
	// upsert decides on rows read without a lock and writes them in one
	// statement only if neither changed since it read them (matchHeld).
	RowVersion, RefuseStale string
	// MergeIntersect says INTERSECT of inputs read in index order merges
	// them in one pass (SQLite); otherwise a semi-join leaves the choice
	// of join to the planner.
	MergeIntersect bool
	// PersonArrays says a statement may take arrays of text parameters
	// and unnest them (PostgreSQL), which lets concurrent Get Person calls
	// share one statement (see fetcher), where each statement is a round
	// trip to a server process.
	PersonArrays bool
	// NewPersonOrd is the value that numbers a person a write inserts
	// (persons.ord): SQLite's trigger would number it by rewriting the row
	// just inserted, its index entry with it.
	NewPersonOrd string
	// ImportOrds hands an import $1 new numbers for its persons
	// (persons.ord, see tag_bits.go), in ascending order: the import writes
	// the tag bits of its new links itself, by those numbers. On SQLite it
	// also spares each new person the trigger that numbers a person by
	// rewriting the row just inserted.
	ImportOrds string
	// ImportMarkOn and ImportMarkOff bracket an import's multi-row INSERTs
	// of new persons and their links: in between, the triggers that derive
	// rows from them (the persons timeline's and the links' tag bit deltas)
	// skip them, and the import writes those rows itself, a few per chunk
	// instead of one per person or link. SQLite marks with a row in
	// import_writes, PostgreSQL with the transaction's pds.import_writes
	// setting.
	ImportMarkOn, ImportMarkOff string
	// ImportCommitsChunks has pds import persons commit each chunk of lines
	// on its own (SQLite): its one writer would otherwise keep every other
	// write of the database waiting for the whole import. An engine whose
	// writers run in parallel imports a file in one transaction, all or
	// nothing, while the other writes go on.
	ImportCommitsChunks bool
	// SerialFold, when set, is run first in the transaction that folds
	// tag bits, and by an import before it writes bits, so that one writer
	// at a time changes tag_bits: a link made and then broken must reach
	// its word in that order, two folds taking turns on a word could apply
	// them the other way round, and a chunk read by one and written back
	// after another's write would undo it.
	SerialFold string
	// MergeJoinTags, when set, is run in a tag filter's read transaction
	// before its statements, so that the planner joins the tags' index
	// ranges by merging them in list order. Estimating one account that
	// fills the table, PostgreSQL would rather hash two sequential scans,
	// which at a million persons costs several times the merge.
	MergeJoinTags string
	// JoinsAsWritten, when set, is run in a read transaction before
	// statements whose joins are written in the order to walk them, each
	// table after the first probed by its index once per row (an export's
	// tags and values: the chunk's persons, then each one's rows). Without
	// it PostgreSQL, estimating a few hundred persons, would rather hash
	// every tag row of the account.
	JoinsAsWritten string
	// SeenOrder is the table whose index on (account_id, last_seen_at, id)
	// orders a window's persons: persons itself when empty (SQLite, which
	// rewrites only the index entries of the columns an update changes), or
	// a narrow table kept beside it (PostgreSQL's person_seen, see its
	// migration 00200), holding those three columns of every person.
	SeenOrder string
	// RowValueRanges says the planner seeks to a row value bound such as
	// (account_id, id) > ($1, $2) in an index on those columns when no
	// equality on account_id stands beside it (PostgreSQL, which would
	// serve "id > $2" from the primary key, across every account); SQLite
	// reads a row value as a filter. See exportRange.
	RowValueRanges bool
	// BoundedMerges says the planner merges a union of ordered index
	// ranges only when each is a subquery with its own ORDER BY and LIMIT
	// (PostgreSQL: Merge Append of bounded scans, where it would append
	// unbounded ones and sort them all); SQLite merges the ranges
	// themselves, and would sort each bounded subquery again. See
	// ListAccountDeliveries.
	BoundedMerges bool
	// ReadSnapshot opens a read transaction whose statements all see one
	// snapshot (a list's total and its page must agree).
	ReadSnapshot *sql.TxOptions
	// SharedBudgets says that any number of instances may serve from one
	// database (PostgreSQL), so rate budgets are counted in it; SQLite's
	// one file has one instance, which counts them in its process.
	SharedBudgets bool
	// Conflict names the conflict with a concurrent transaction an error
	// of the engine's driver reports (ConflictDeadlock, ...), after which
	// the transaction is rolled back whole and may run again; "" for any
	// other error (see retryingConflicts).
	Conflict func(err error) string
	// LockPerson ends the SELECT with which a write locks a person's row
	// before anything else it touches of the person (see lockPersons): a
	// lock that conflicts with every other writer of the row but not with
	// the foreign-key checks of rows that refer to it (PostgreSQL's FOR NO
	// KEY UPDATE, which is what the UPDATE of a person takes anyway).
	LockPerson string
	// AccountLock, given a key naming an account and a purpose ($1), takes
	// a lock on that key until the transaction ends (PostgreSQL's
	// transaction-level advisory locks): the writes of one account that
	// check a count or a uniqueness before inserting take turns on it,
	// while every other write of the account goes on (see lockAccount).
	// Empty where write transactions are exclusive already.
	AccountLock string
	// Changes places and passes the entries of the change feed
	// (person_changes.go).
	Changes ChangeFeed
	// Unavailable names the fault an error of the engine's driver reports
	// when the database cannot serve for now (unreachable, out of disk,
	// too slow), or "" when the error is anything else (see Classify).
	Unavailable func(err error) domain.Cause
	// NoPrimary says an error of the engine's driver means that the
	// servers answer but none takes writes (Classify wraps
	// domain.ErrNoPrimary in its refusal), and Writable is a statement
	// answering whether the server behind the writer's pool takes writes
	// (Ping); both unset where one database file takes every write.
	NoPrimary func(err error) bool
	Writable  string
	// Confirm is a statement whose commit returns once what the server
	// committed before it is as durable as the server's settings ask (its
	// synchronous standbys have it), and fails otherwise: the answer of a
	// call that finds its own write of a batch whose answer was lost
	// (confirmDurable). Empty where a commit is the whole of durability.
	Confirm string
}

// IsUniqueViolation reports whether err is a unique-constraint violation; set per engine.
type IsUniqueViolation func(error) bool

// Store is the shared implementation. Writes go through w; reads through r,
// which for SQLite is a separate pool of read-only connections.
type Store struct {
	dialect  Dialect
	r, w     *sql.DB
	isUnique IsUniqueViolation

	stmts sync.Map // query text -> *sql.Stmt, per pool (see stmtKey)
	// bareStmts holds each query's *bareStatement (nil: prepared as
	// written), when the dialect asks for BareParams.
	bareStmts sync.Map

	// gc runs inTx's transactions when the dialect asks for group commit.
	gc *committer
	// folder folds timeline deltas into their buckets in the background.
	folder *folder
	// closers are the engine's background work, stopped first by Close;
	// afterClose what the engine lets go of once the pools are closed.
	closers, afterClose []io.Closer
	// personReads are the dialect's statements reading one person whole.
	personReads personReads
	// keys caches keys read by hash, when the engine turned it on (CacheKeys).
	keys *keyCache
	// persons caches Get Person, when the engine turned it on (CachePersons).
	persons *personCache
	// creator batches createUnlessHeld (ModifyingCTE engines).
	creator *creator
	// appender batches appendToHolder (ModifyingCTE engines).
	appender *appender
	// fetcher batches Get Person (PersonArrays engines).
	fetcher *fetcher
	// secrets keeps each account's suppression secret once read: made
	// once, never changed (suppressions.go).
	secrets sync.Map
	// sealer seals and opens the secrets the database holds (sealed.go);
	// nil keeps them in clear.
	sealer *secrets.Keyring
	// retries counts the transactions run again after a conflict.
	retries retryCounts
	// lost keeps the tokens of claims that failed (lost_leases.go).
	lost lostLeases
	// loseClaim, set by tests only, turns what a claim's statement returned
	// into what the claim hears, as a connection lost at its commit does.
	loseClaim func(error) error
	// beforeMatchWrite, set by tests only, runs between the read matchHeld
	// decides on and its write.
	beforeMatchWrite func()
}

type stmtKey struct {
	db    *sql.DB
	query string
}

// New builds a Store over the given pools. r and w may be the same pool.
func New(d Dialect, r, w *sql.DB, isUnique IsUniqueViolation) *Store {
	s := &Store{dialect: d, r: r, w: w, isUnique: isUnique, personReads: newPersonReads(d)}
	if d.GroupCommit {
		s.gc = newCommitter(s)
	}
	if d.ModifyingCTE {
		s.creator = startCreator(s)
		s.appender = startAppender(s)
	}
	if d.PersonArrays {
		s.fetcher = startFetcher(s)
	}
	s.folder = startFolder(s)
	return s
}

// CloseWith has Close stop c (an engine's background work on the
// database) first.
func (s *Store) CloseWith(c io.Closer) { s.closers = append(s.closers, c) }

// CloseAfter has Close close c once the pools are closed: what must outlive
// every connection to the database (SQLite's WAL index descriptor).
func (s *Store) CloseAfter(c io.Closer) { s.afterClose = append(s.afterClose, c) }

// BetweenWrites runs fn on the writer's pool between two of its write
// transactions and in none (with group commit: after the batch under way,
// before the next), so that fn meets no write in progress on the writer's
// own connection and waits for none: SQLite's checkpointer restarts the WAL
// this way (sqlite/checkpoint.go).
func (s *Store) BetweenWrites(ctx context.Context, fn func(context.Context, *sql.DB) error) error {
	if s.gc == nil {
		return fn(ctx, s.w)
	}
	return s.gc.runOutside(ctx, func(querier) error { return fn(ctx, s.w) })
}

// SharesBudgets says whether rate budgets are counted in the database
// (Dialect.SharedBudgets).
func (s *Store) SharesBudgets() bool { return s.dialect.SharedBudgets }

// Engine names the engine.
func (s *Store) Engine() string { return s.dialect.Name }

// Ping reads a row through each pool, and checks that the writer's takes
// writes (Dialect.Writable). A read, where a ping of the driver would only
// check a connection, meets what keeps the database from serving: SQLite's
// files failing their reads (its WAL index cut short, the disk's I/O
// errors); a database whose server became a standby answers, but serves no
// write.
func (s *Store) Ping(ctx context.Context) error {
	for _, db := range []*sql.DB{s.r, s.w} {
		var n int64
		if err := db.QueryRowContext(ctx, `SELECT n FROM key_changes WHERE id = 1`).Scan(&n); err != nil {
			return err
		}
	}
	if s.dialect.Writable == "" {
		return nil
	}
	var writable bool
	if err := s.w.QueryRowContext(ctx, s.dialect.Writable).Scan(&writable); err != nil {
		return err
	}
	if !writable {
		return &domain.UnavailableError{Cause: domain.CauseUnreachable, Err: domain.ErrNoPrimary}
	}
	return nil
}

// Classify returns err as a *domain.UnavailableError when it says the
// database cannot serve for now: its deadline passed, a connection could
// not be had or was lost, or the engine's driver names a fault
// (Dialect.Unavailable). Any other error is returned as it is.
func (s *Store) Classify(err error) error {
	if err == nil {
		return nil
	}
	var ue *domain.UnavailableError
	if errors.As(err, &ue) {
		return err
	}
	var cause domain.Cause
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		cause = domain.CauseTimeout
	case errors.Is(err, driver.ErrBadConn), errors.Is(err, sql.ErrConnDone):
		cause = domain.CauseUnreachable
	case s.dialect.Unavailable != nil:
		cause = s.dialect.Unavailable(err)
	}
	if cause == "" {
		return err
	}
	if cause == domain.CauseUnreachable && s.dialect.NoPrimary != nil && s.dialect.NoPrimary(err) {
		err = fmt.Errorf("%w: %w", domain.ErrNoPrimary, err)
	}
	return &domain.UnavailableError{Cause: cause, Err: err}
}

// confirmDurable returns once everything the server committed before it is
// as durable as the database is set to make it (Dialect.Confirm), or the
// refusal when that cannot be confirmed.
func (s *Store) confirmDurable(ctx context.Context) error {
	if s.dialect.Confirm == "" {
		return nil
	}
	_, err := s.writer().exec(ctx, s.dialect.Confirm)
	return err
}

// Close stops the committer (answering the writes still queued) and the
// key cache's KeySync, then closes the pools and the prepared statements.
func (s *Store) Close() error {
	s.folder.close()
	var err error
	for _, c := range s.closers {
		err = errors.Join(err, c.Close())
	}
	if s.gc != nil {
		s.gc.close()
	}
	if s.creator != nil {
		s.creator.close()
	}
	if s.appender != nil {
		s.appender.close()
	}
	if s.fetcher != nil {
		s.fetcher.close()
	}
	if s.keys != nil {
		err = errors.Join(err, s.keys.sync.Close())
	}
	s.stmts.Range(func(_, v any) bool {
		v.(*sql.Stmt).Close()
		return true
	})
	err = errors.Join(err, s.r.Close())
	if s.w != s.r {
		err = errors.Join(err, s.w.Close())
	}
	for _, c := range s.afterClose {
		err = errors.Join(err, c.Close())
	}
	return err
}

// stmt returns the statement for q on db, preparing it once per pool.
func (s *Store) stmt(ctx context.Context, db *sql.DB, q string) (*sql.Stmt, error) {
	k := stmtKey{db, q}
	if v, ok := s.stmts.Load(k); ok {
		return v.(*sql.Stmt), nil
	}
	st, err := db.PrepareContext(ctx, s.sqlText(q))
	if err != nil {
		return nil, err
	}
	if v, loaded := s.stmts.LoadOrStore(k, st); loaded {
		st.Close()
		return v.(*sql.Stmt), nil
	}
	return st, nil
}

// querier runs SQL against a pool or a transaction, through prepared statements.
type querier struct {
	s  *Store
	db *sql.DB
	tx *sql.Tx
	// misses collects statements a transaction had to prepare on its own
	// connection; they join the cache after it ends.
	misses *[]string
	// txStmts holds the statements this transaction has used, each made
	// once for it (see txStatement).
	txStmts map[string]*sql.Stmt
	// shared: the group committer's transaction, which runs the work of
	// many callers.
	shared bool
	// noSecret holds the accounts this transaction found without a
	// suppression secret (see suppressionSecret); nil where a transaction's
	// statements may each see other transactions' commits.
	noSecret map[string]bool
}

func (q querier) prepared(ctx context.Context, query string) (*sql.Stmt, error) {
	if q.tx == nil {
		return q.s.stmt(ctx, q.db, query)
	}
	if v, ok := q.s.stmts.Load(stmtKey{q.db, query}); ok {
		return q.tx.StmtContext(ctx, v.(*sql.Stmt)), nil
	}
	// Preparing on the pool would wait for a free connection, and the SQLite
	// writer has only the one this transaction holds.
	*q.misses = append(*q.misses, query)
	return q.tx.PrepareContext(ctx, q.s.sqlText(query))
}

func (q querier) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if q.tx == nil && q.db == q.s.w && q.s.gc != nil {
		// A single write joins the committer's next batch rather than
		// taking the writer connection, and a commit, of its own.
		var res sql.Result
		err := q.s.gc.run(ctx, func(tq querier) error {
			var err error
			res, err = tq.exec(ctx, query, args...)
			return err
		})
		return res, err
	}
	if q.s.dialect.Unprepared {
		if q.tx != nil {
			return q.tx.ExecContext(ctx, query, args...)
		}
		return q.db.ExecContext(ctx, query, args...)
	}
	st, err := q.txStatement(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, q.s.bindArgs(query, args)...)
}

// writeQuery runs a statement that writes and answers rows (UPDATE ...
// RETURNING) on the writer, and hands its rows to scan, which may be called
// again from the start (it must set its results afresh). With group commit
// it joins the committer's next batch, as a single exec does: the
// committer alone waits for the write lock another process holds (see
// committer.begin).
func (s *Store) writeQuery(ctx context.Context, scan func(*sql.Rows) error, query string, args ...any) error {
	run := func(q querier) error {
		rows, err := q.query(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		if err := scan(rows); err != nil {
			return err
		}
		return rows.Close()
	}
	if s.gc != nil {
		return s.gc.run(ctx, run)
	}
	return run(s.writer())
}

func (q querier) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if q.s.dialect.Unprepared {
		if q.tx != nil {
			return q.tx.QueryContext(ctx, query, args...)
		}
		return q.db.QueryContext(ctx, query, args...)
	}
	st, err := q.txStatement(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, q.s.bindArgs(query, args)...)
}

// queryRow returns the row; its error (sql.ErrNoRows included) surfaces on Scan.
func (q querier) queryRow(ctx context.Context, query string, args ...any) *row {
	rows, err := q.query(ctx, query, args...)
	return &row{rows: rows, err: err}
}

// row mirrors sql.Row for prepared statements run through querier.
type row struct {
	rows *sql.Rows
	err  error
}

func (r *row) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	if err := r.rows.Close(); err != nil {
		return err
	}
	// Rows that database/sql closed itself at the deadline answer nil to
	// Close, and the deadline to Err: a one-statement write whose commit
	// ran into it must not pass for done.
	return r.rows.Err()
}

// reader is for reads outside a transaction.
func (s *Store) reader() querier { return querier{s: s, db: s.r} }

// writer is for single-statement writes outside a transaction.
func (s *Store) writer() querier { return querier{s: s, db: s.w} }

// txQuerier is the querier of tx, a transaction on db. done, called once
// the transaction has ended, adds the statements it had to prepare on its
// own connection to the pool's cache.
func (s *Store) txQuerier(ctx context.Context, db *sql.DB, tx *sql.Tx) (q querier, done func()) {
	var misses []string
	q = querier{s: s, db: db, tx: tx, misses: &misses, txStmts: map[string]*sql.Stmt{}}
	if s.dialect.GroupCommit {
		// SQLite: a transaction reads one snapshot, and a write
		// transaction holds the database's one write lock.
		q.noSecret = map[string]bool{}
	}
	return q, func() {
		for _, query := range misses {
			_, _ = s.stmt(ctx, db, query)
		}
	}
}

// inTx runs fn in a write transaction, committing when fn returns nil. With
// group commit the transaction is a savepoint of a transaction shared with
// other callers; either way inTx returns nil only once fn's work has
// committed. A transaction that loses to a concurrent one (a deadlock, a
// serialization failure, a busy database) runs again from the start
// (retryingConflicts), so fn may run more than once and must set its
// results afresh on each run.
func (s *Store) inTx(ctx context.Context, fn func(q querier) error) error {
	return s.retryingConflicts(ctx, func() error {
		if s.gc != nil {
			return s.gc.run(ctx, fn)
		}
		return s.runTx(ctx, fn)
	})
}

// runTx runs fn once in a write transaction of its own.
func (s *Store) runTx(ctx context.Context, fn func(q querier) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	q, done := s.txQuerier(ctx, s.w, tx)
	defer done()
	if err := fn(q); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// inTxAlone is inTx for a caller that fills a commit by itself: with group
// commit it runs in a transaction of its own, without the savepoint that
// shares one (see committer.runAlone). An error from fn rolls back all of
// fn's work either way.
func (s *Store) inTxAlone(ctx context.Context, fn func(q querier) error) error {
	return s.retryingConflicts(ctx, func() error {
		if s.gc != nil {
			return s.gc.runAlone(ctx, fn)
		}
		return s.runTx(ctx, fn)
	})
}

// inTxOnce is inTxAlone for a caller whose fn cannot run twice (it consumes
// its input): with group commit it runs in a transaction shared with no
// other caller, so that no one else's failure makes the committer run it
// again (see committer.runOnce), and a conflict fails it rather than run it
// again.
func (s *Store) inTxOnce(ctx context.Context, fn func(q querier) error) error {
	if s.gc != nil {
		return s.gc.runOnce(ctx, fn)
	}
	return s.runTx(ctx, fn)
}

// inReadTx runs fn in one read-only transaction, so that its statements
// see one snapshot.
func (s *Store) inReadTx(ctx context.Context, fn func(q querier) error) error {
	tx, err := s.r.BeginTx(ctx, s.dialect.ReadSnapshot)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // a read-only transaction has nothing to keep
	q, done := s.txQuerier(ctx, s.r, tx)
	defer done()
	if err := fn(q); err != nil {
		return err
	}
	return tx.Commit()
}

// sqlArgs collects the arguments of a query built piece by piece and hands
// out their numbered placeholders ($1, $2, ...), which both engines read
// (SQLite's statements are rewritten once, when prepared: bareparams.go).
type sqlArgs []any

// add appends v and returns its placeholder.
func (a *sqlArgs) add(v any) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a))
}

// list appends vs and returns their placeholders, comma-separated, for IN (...).
func (a *sqlArgs) list(vs ...any) string {
	var b strings.Builder
	for i, v := range vs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(a.add(v))
	}
	return b.String()
}
