package sqlstore

import (
	"context"
	"database/sql"
)

// Unprepared runs every statement by its text, never through a
// database/sql prepared statement (PostgreSQL): a prepared statement is
// named on one server connection, which a transaction-mode pooler
// (PgBouncer) gives to another client once the transaction ends. The
// driver caches each statement's description instead, per connection,
// without naming it on the server (pgx's QueryExecModeCacheDescribe).
var Unprepared Statements = unprepared{}

type unprepared struct{}

func (unprepared) exec(ctx context.Context, q querier, query string, args []any) (sql.Result, error) {
	if q.tx != nil {
		return q.tx.ExecContext(ctx, query, args...)
	}
	return q.db.ExecContext(ctx, query, args...)
}

func (unprepared) query(ctx context.Context, q querier, query string, args []any) (*sql.Rows, error) {
	if q.tx != nil {
		return q.tx.QueryContext(ctx, query, args...)
	}
	return q.db.QueryContext(ctx, query, args...)
}
