package sqlstore

import (
	"context"
	"database/sql"
)

// Statements is how an engine runs a statement's text (Dialect.Statements):
// Unprepared, by its text (PostgreSQL, postgres_statements.go), or
// BareParams, through prepared statements with anonymous parameters
// (SQLite, sqlite_bareparams.go).
type Statements interface {
	exec(ctx context.Context, q querier, query string, args []any) (sql.Result, error)
	query(ctx context.Context, q querier, query string, args []any) (*sql.Rows, error)
}

// prepared runs statements through database/sql prepared statements, made
// once per pool and once per transaction (txStatement), with the text and
// arguments rewritten as the engine binds them best (sqlText, bindArgs).
type prepared struct{}

func (prepared) exec(ctx context.Context, q querier, query string, args []any) (sql.Result, error) {
	st, err := q.txStatement(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, q.s.bindArgs(query, args)...)
}

func (prepared) query(ctx context.Context, q querier, query string, args []any) (*sql.Rows, error) {
	st, err := q.txStatement(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, q.s.bindArgs(query, args)...)
}
