package transfer

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// postgresSide is a PostgreSQL database (the schema its URL's search_path
// names first), through one connection holding one transaction: REPEATABLE
// READ READ ONLY on a source, so that every table is read from the one
// snapshot its first statement takes, and an ordinary one on a target.
// Everything happens inside that transaction, so the URL may name a pooler
// in transaction mode.
type postgresSide struct {
	conn *pgx.Conn
	tx   pgx.Tx
	// held are the tables whose triggers hold disabled.
	held []string
}

func openPostgres(ctx context.Context, url string, write bool) (*postgresSide, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 10 * time.Second
	}
	// Statements described and run unnamed, as the store runs them
	// behind a pooler: a statement prepared by name lives on the server
	// connection the pooler lent, which another client may have prepared
	// the same name on already (42P05), even inside one transaction.
	if !strings.Contains(url, "default_query_exec_mode=") {
		cfg.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	opts := pgx.TxOptions{}
	if !write {
		opts = pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	}
	tx, err := conn.BeginTx(ctx, opts)
	if err != nil {
		conn.Close(ctx)
		return nil, err
	}
	return &postgresSide{conn: conn, tx: tx}, nil
}

func (s *postgresSide) engine() string { return "postgres" }

func (s *postgresSide) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if s.tx != nil {
		_ = s.tx.Rollback(ctx)
	}
	s.conn.Close(ctx)
}

func (s *postgresSide) query(ctx context.Context, query string, fn func([]any) error, args ...any) error {
	rows, err := s.tx.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return err
		}
		if err := fn(vals); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (s *postgresSide) exec(ctx context.Context, query string, args ...any) error {
	_, err := s.tx.Exec(ctx, query, args...)
	return err
}

func (s *postgresSide) tables(ctx context.Context) ([]string, error) {
	var out []string
	err := s.query(ctx, `SELECT table_name::text FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`, func(v []any) error {
		out = append(out, fmt.Sprint(v[0]))
		return nil
	})
	return out, err
}

func (s *postgresSide) columns(ctx context.Context, table string) ([]column, error) {
	var out []column
	err := s.query(ctx, `SELECT column_name::text, udt_name::text FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position`, func(v []any) error {
		udt := fmt.Sprint(v[1])
		out = append(out, column{name: fmt.Sprint(v[0]), kind: postgresKind(udt), decl: udt})
		return nil
	}, table)
	return out, err
}

// userTriggers selects the schema's triggers, but for the ones PostgreSQL
// makes for foreign keys.
const userTriggers = `SELECT t.tgname::text, c.relname::text FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
	WHERE NOT t.tgisinternal AND c.relnamespace = current_schema()::regnamespace`

func (s *postgresSide) triggers(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	err := s.query(ctx, userTriggers, func(v []any) error {
		out[fmt.Sprint(v[0])] = fmt.Sprint(v[1])
		return nil
	})
	return out, err
}

func (s *postgresSide) lockAccounts(ctx context.Context) error {
	return s.exec(ctx, `LOCK TABLE accounts IN EXCLUSIVE MODE`)
}

// hold disables the triggers of every table that has some (the foreign
// keys' stay), inside the transaction: a transfer that fails leaves them
// enabled.
func (s *postgresSide) hold(ctx context.Context) error {
	seen := map[string]bool{}
	var tables []string
	err := s.query(ctx, userTriggers+` ORDER BY 2`, func(v []any) error {
		if t := fmt.Sprint(v[1]); !seen[t] {
			seen[t] = true
			tables = append(tables, t)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, t := range tables {
		if err := s.exec(ctx, `ALTER TABLE `+pgx.Identifier{t}.Sanitize()+` DISABLE TRIGGER USER`); err != nil {
			return err
		}
		s.held = append(s.held, t)
	}
	return nil
}

func (s *postgresSide) restore(ctx context.Context) error {
	for _, t := range s.held {
		if err := s.exec(ctx, `ALTER TABLE `+pgx.Identifier{t}.Sanitize()+` ENABLE TRIGGER USER`); err != nil {
			return err
		}
	}
	s.held = nil
	return nil
}

// insert copies rows in with COPY FROM, one statement a batch: the
// foreign keys' checks are queued per statement, so a batch bounds them.
func (s *postgresSide) insert(ctx context.Context, table string, cols []string, rows [][]any) error {
	_, err := s.tx.CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromRows(rows))
	return err
}

// feedExtra: PostgreSQL places its feed by transaction, then a number
// within it (migration 00240): the feed copied is this transaction's, in
// the source's order, and every later change comes after it.
func (s *postgresSide) feedExtra(ctx context.Context) ([]string, func(int64) []any, error) {
	var xid uint64
	err := s.query(ctx, `SELECT pg_current_xact_id()::text`, func(v []any) error {
		var err error
		xid, err = strconv.ParseUint(fmt.Sprint(v[0]), 10, 64)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return []string{"xid", "seq"}, func(seq int64) []any { return []any{xid, seq} }, nil
}

func (s *postgresSide) rebuild() []string {
	return []string{
		`INSERT INTO person_seen (account_id, id, last_seen_at) SELECT account_id, id, last_seen_at FROM persons`,
		// The next person written takes the ord after the last copied.
		`SELECT setval(pg_get_serial_sequence('persons', 'ord'), COALESCE(MAX(ord), 0) + 1, false) FROM persons`,
	}
}

func (s *postgresSide) commit(ctx context.Context) error {
	err := s.tx.Commit(ctx)
	s.tx = nil
	return err
}

// analyze: a table not analyzed since it was filled is planned as empty.
func (s *postgresSide) analyze(ctx context.Context, tables []string) error {
	for _, t := range tables {
		if _, err := s.conn.Exec(ctx, `ANALYZE `+pgx.Identifier{t}.Sanitize()); err != nil {
			return fmt.Errorf("analyze %s: %w", t, err)
		}
	}
	return nil
}
