package sqlstore

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
)

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
	if q.tx == nil && q.db == q.s.w {
		// A single write outside a transaction: the dialect's Writes runs it.
		var res sql.Result
		err := q.s.writes.single(ctx, q, func(tq querier) error {
			var err error
			res, err = tq.execHere(ctx, query, args...)
			return err
		})
		return res, err
	}
	return q.execHere(ctx, query, args...)
}

// execHere runs the statement on q itself.
func (q querier) execHere(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return q.s.dialect.Statements.exec(ctx, q, query, args)
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
	return s.writes.single(ctx, s.writer(), run)
}

func (q querier) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return q.s.dialect.Statements.query(ctx, q, query, args)
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
	s.writes.opened(&q)
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
		return s.writes.run(ctx, fn)
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
		return s.writes.runAlone(ctx, fn)
	})
}

// inTxOnce is inTxAlone for a caller whose fn cannot run twice (it consumes
// its input): with group commit it runs in a transaction shared with no
// other caller, so that no one else's failure makes the committer run it
// again (see committer.runOnce), and a conflict fails it rather than run it
// again.
func (s *Store) inTxOnce(ctx context.Context, fn func(q querier) error) error {
	return s.writes.runOnce(ctx, fn)
}

// inReadTx runs fn in one read-only transaction, so that its statements
// see one snapshot.
func (s *Store) inReadTx(ctx context.Context, fn func(q querier) error) error {
	return s.inReadTxOn(ctx, s.r, fn)
}

// inReadTxOn is inReadTx on db: the reader's pool, or a replica's
// (safeReadTx).
func (s *Store) inReadTxOn(ctx context.Context, db *sql.DB, fn func(q querier) error) error {
	tx, err := db.BeginTx(ctx, s.dialect.ReadSnapshot)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // a read-only transaction has nothing to keep
	q, done := s.txQuerier(ctx, db, tx)
	defer done()
	if err := fn(q); err != nil {
		return err
	}
	return tx.Commit()
}

// sqlArgs collects the arguments of a query built piece by piece and hands
// out their numbered placeholders ($1, $2, ...), which both engines read
// (SQLite's statements are rewritten once, when prepared: sqlite_bareparams.go).
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
