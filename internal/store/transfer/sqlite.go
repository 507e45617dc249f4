package transfer

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// sqliteSide is an SQLite file, through one connection holding one
// transaction: a read transaction on a source (its snapshot is taken at
// its first read and held to the end), the write transaction on a target.
type sqliteSide struct {
	db   *sql.DB
	conn *sql.Conn
	tx   *sql.Tx
	// held are the statements that create the triggers hold dropped.
	held []string
	// stmts are the target's prepared inserts, by statement.
	stmts map[string]*sql.Stmt
}

// sqliteDSN opens path without creating it (mode=rw), waiting for a lock
// another connection or process holds as pds's own connections do.
func sqliteDSN(path string, write bool) string {
	q := url.Values{}
	q.Set("mode", "rw")
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "foreign_keys(ON)")
	if write {
		q.Set("_txlock", "immediate")
		q.Add("_pragma", "synchronous(FULL)")
		// The transaction writes the whole instance: keep more of it in
		// memory than SQLite's 2 MB before it spills pages to the log,
		// but not much more, since the sorts that derive the timelines
		// take as much again.
		q.Add("_pragma", "cache_size(-16384)")
	} else {
		q.Add("_pragma", "query_only(ON)")
	}
	return "file:" + path + "?" + q.Encode()
}

// openSQLite opens the file at path, which must exist, and begins the
// side's transaction.
func openSQLite(ctx context.Context, path string, write bool) (*sqliteSide, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("there is no SQLite database at %s", path)
	}
	db, err := sql.Open("sqlite", sqliteDSN(path, write))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, err
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		conn.Close()
		db.Close()
		return nil, err
	}
	return &sqliteSide{db: db, conn: conn, tx: tx, stmts: map[string]*sql.Stmt{}}, nil
}

func (s *sqliteSide) engine() string { return "sqlite" }

func (s *sqliteSide) close() {
	for _, st := range s.stmts {
		st.Close()
	}
	if s.tx != nil {
		_ = s.tx.Rollback()
	}
	s.conn.Close()
	s.db.Close()
}

func (s *sqliteSide) query(ctx context.Context, query string, fn func([]any) error, args ...any) error {
	rows, err := s.tx.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		if err := fn(vals); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (s *sqliteSide) exec(ctx context.Context, query string, args ...any) error {
	_, err := s.tx.ExecContext(ctx, query, args...)
	return err
}

func (s *sqliteSide) tables(ctx context.Context) ([]string, error) {
	var out []string
	err := s.query(ctx, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`,
		func(v []any) error {
			out = append(out, fmt.Sprint(v[0]))
			return nil
		})
	return out, err
}

func (s *sqliteSide) columns(ctx context.Context, table string) ([]column, error) {
	var out []column
	err := s.query(ctx, `SELECT name, type FROM pragma_table_info(?) ORDER BY cid`, func(v []any) error {
		decl := fmt.Sprint(v[1])
		out = append(out, column{name: fmt.Sprint(v[0]), kind: sqliteKind(decl), decl: decl})
		return nil
	}, table)
	return out, err
}

func (s *sqliteSide) triggers(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	err := s.query(ctx, `SELECT name, tbl_name FROM sqlite_schema WHERE type = 'trigger'`, func(v []any) error {
		out[fmt.Sprint(v[0])] = fmt.Sprint(v[1])
		return nil
	})
	return out, err
}

// lockAccounts: the write transaction (BEGIN IMMEDIATE) holds the file's
// one write lock from its start.
func (s *sqliteSide) lockAccounts(context.Context) error { return nil }

// hold drops every trigger, inside the transaction, keeping the statement
// that creates it for restore: SQLite has no way to disable one, and its
// schema changes are transactional, so that a transfer that fails leaves
// them as they were.
func (s *sqliteSide) hold(ctx context.Context) error {
	type trig struct{ name, sql string }
	var all []trig
	err := s.query(ctx, `SELECT name, sql FROM sqlite_schema WHERE type = 'trigger' ORDER BY name`, func(v []any) error {
		all = append(all, trig{fmt.Sprint(v[0]), fmt.Sprint(v[1])})
		return nil
	})
	if err != nil {
		return err
	}
	for _, t := range all {
		if err := s.exec(ctx, `DROP TRIGGER `+t.name); err != nil {
			return err
		}
		s.held = append(s.held, t.sql)
	}
	return nil
}

func (s *sqliteSide) restore(ctx context.Context) error {
	for _, create := range s.held {
		if err := s.exec(ctx, create); err != nil {
			return err
		}
	}
	s.held = nil
	return nil
}

// sqliteMaxVars bounds the parameters of one statement (SQLite's limit is
// 32766); sqliteMaxRows the rows of one INSERT.
const (
	sqliteMaxVars = 32000
	sqliteMaxRows = 256
)

// insert writes rows with multi-row INSERTs, prepared once per shape.
func (s *sqliteSide) insert(ctx context.Context, table string, cols []string, rows [][]any) error {
	per := min(sqliteMaxRows, sqliteMaxVars/len(cols))
	for len(rows) > 0 {
		n := min(per, len(rows))
		st, err := s.prepared(ctx, table, cols, n)
		if err != nil {
			return err
		}
		args := make([]any, 0, n*len(cols))
		for _, r := range rows[:n] {
			args = append(args, r...)
		}
		if _, err := st.ExecContext(ctx, args...); err != nil {
			return err
		}
		rows = rows[n:]
	}
	return nil
}

func (s *sqliteSide) prepared(ctx context.Context, table string, cols []string, n int) (*sql.Stmt, error) {
	one := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ") + ")"
	query := `INSERT INTO ` + table + ` (` + list(cols) + `) VALUES ` + strings.TrimSuffix(strings.Repeat(one+", ", n), ", ")
	if st, ok := s.stmts[query]; ok {
		return st, nil
	}
	st, err := s.tx.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	// Full batches share one statement; a table's last, shorter one is
	// kept too (one a table).
	s.stmts[query] = st
	return st, nil
}

// feedExtra: SQLite numbers its feed with one counter (change_seq).
func (s *sqliteSide) feedExtra(context.Context) ([]string, func(int64) []any, error) {
	return []string{"seq"}, func(seq int64) []any { return []any{seq} }, nil
}

func (s *sqliteSide) rebuild() []string {
	return []string{
		`UPDATE change_seq SET n = (SELECT COALESCE(MAX(seq), 0) FROM person_changes)`,
	}
}

func (s *sqliteSide) commit(ctx context.Context) error {
	for q, st := range s.stmts {
		st.Close()
		delete(s.stmts, q)
	}
	err := s.tx.Commit()
	s.tx = nil
	return err
}

// analyze: SQLite plans from the statistics its migrations wrote, which
// describe accounts of a million persons from the start.
func (s *sqliteSide) analyze(context.Context, []string) error { return nil }
