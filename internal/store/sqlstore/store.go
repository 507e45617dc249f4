package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/secrets"
)

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
	// written), when the dialect's Statements are BareParams.
	bareStmts sync.Map

	// writes runs the write transactions, as the dialect's Writes says.
	writes writeRunner
	// folder folds timeline deltas into their buckets in the background.
	folder *folder
	// closers are the engine's background work, stopped first by Close;
	// afterClose what the engine lets go of once the pools are closed.
	closers, afterClose []io.Closer
	// personReads are the dialect's statements reading one person whole.
	personReads personReads
	// router sends the reads safe on a replica to one (RouteReads); nil
	// without replicas.
	router ReadRouter
	// keys caches keys read by hash, when the engine turned it on (CacheKeys).
	keys *keyCache
	// persons caches Get Person, when the engine turned it on (CachePersons).
	persons *personCache
	// creator batches createUnlessHeld (started by CreateUnlessHeld).
	creator *creator
	// appender batches appendToHolder (started by AppendInOneStatement).
	appender *appender
	// gets reads Get Person's person, as the dialect's Gets says.
	gets personGetter
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
	s.writes = d.Writes.start(s)
	d.Upserts.start(s)
	d.Appends.start(s)
	s.gets = d.Gets.start(s)
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
func (s *Store) BetweenWrites(ctx context.Context, fn func(context.Context, *sql.DB) error) (err error) {
	defer named("BetweenWrites", &err)
	return s.writes.between(ctx, fn)
}

// SharesBudgets says whether rate budgets are counted in the database
// (Dialect.Budgets).
func (s *Store) SharesBudgets() bool { return s.dialect.Budgets == BudgetsInDatabase }

// Engine names the engine.
func (s *Store) Engine() string { return s.dialect.Name }

// Ping reads a row through each pool, and checks that the writer's takes
// writes (Dialect.Writable). A read, where a ping of the driver would only
// check a connection, meets what keeps the database from serving: SQLite's
// files failing their reads (its WAL index cut short, the disk's I/O
// errors); a database whose server became a standby answers, but serves no
// write.
func (s *Store) Ping(ctx context.Context) (err error) {
	defer named("Ping", &err)
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
func (s *Store) Close() (err error) {
	defer named("Close", &err)
	s.folder.close()
	for _, c := range s.closers {
		err = errors.Join(err, c.Close())
	}
	s.writes.close()
	s.dialect.Upserts.stop(s)
	s.dialect.Appends.stop(s)
	s.gets.close()
	if s.keys != nil {
		err = errors.Join(err, s.keys.sync.Close())
	}
	if s.router != nil {
		err = errors.Join(err, s.router.Close())
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
