package transfer

import (
	"context"
	"strings"
)

// side is one end of a transfer: a connection inside the transaction it
// reads (the source's snapshot) or writes (the target's) in.
type side interface {
	// engine is "sqlite" or "postgres".
	engine() string
	// tables lists the schema's tables.
	tables(ctx context.Context) ([]string, error)
	// columns lists a table's columns in their order.
	columns(ctx context.Context, table string) ([]column, error)
	// triggers lists the schema's triggers by name, with their table.
	triggers(ctx context.Context) (map[string]string, error)
	// query runs a statement and calls fn with each row's values, as the
	// driver gives them, streamed: no more than a row is held.
	query(ctx context.Context, sql string, fn func([]any) error, args ...any) error
	exec(ctx context.Context, sql string, args ...any) error
	close()
}

// target is the side written: one transaction, committed at the end.
type target interface {
	side
	// lockAccounts keeps every other writer of accounts (a pds serve that
	// would make its first account) waiting until the commit.
	lockAccounts(ctx context.Context) error
	// hold keeps the schema's triggers from firing until restore.
	hold(ctx context.Context) error
	restore(ctx context.Context) error
	// insert writes rows (values in the order of cols, of the columns'
	// kinds) into table.
	insert(ctx context.Context, table string, cols []string, rows [][]any) error
	// feedExtra is what the change feed's rows take beside the source's
	// columns: its number, and on PostgreSQL the transaction's id.
	feedExtra(ctx context.Context) (cols []string, values func(seq int64) []any, err error)
	// rebuild is what each engine derives beyond what both do (rebuildAll).
	rebuild() []string
	commit(ctx context.Context) error
	// analyze brings the planner's statistics up to date after the
	// commit, where the engine needs it.
	analyze(ctx context.Context, tables []string) error
}

// count reads how many rows a table holds.
func count(ctx context.Context, s side, table string) (int64, error) {
	var n int64
	err := s.query(ctx, `SELECT COUNT(*) FROM `+table, func(v []any) error {
		x, err := convert(v[0], kindInt)
		if err == nil {
			n = x.(int64)
		}
		return err
	})
	return n, err
}

// holdsRows says whether a table holds any row.
func holdsRows(ctx context.Context, s side, table string) (bool, error) {
	found := false
	err := s.query(ctx, `SELECT 1 FROM `+table+` LIMIT 1`, func([]any) error {
		found = true
		return nil
	})
	return found, err
}

// names lists the names of columns.
func names(cols []column) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.name
	}
	return out
}

func list(names []string) string { return strings.Join(names, ", ") }
