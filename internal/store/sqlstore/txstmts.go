package sqlstore

import (
	"context"
	"database/sql"
)

// txStatement returns the statement for query, within a transaction made
// once per transaction. Binding a cached statement to a transaction
// (Tx.StmtContext) or preparing one on it (Tx.PrepareContext) makes a new
// statement that the transaction keeps open until it ends, so a transaction
// that runs the same statements many times (an import of a million persons)
// would otherwise prepare, or bind, and keep millions of them.
func (q querier) txStatement(ctx context.Context, query string) (*sql.Stmt, error) {
	if q.tx == nil || q.txStmts == nil {
		return q.prepared(ctx, query)
	}
	if st, ok := q.txStmts[query]; ok {
		return st, nil
	}
	// In a transaction the committer shares between callers, the statement
	// outlives this caller: its context ending mid-prepare must not break
	// the others' transaction. A transaction of one caller's own ends with
	// its context, and so does the prepare, or a frozen database would hold
	// the caller past its deadline.
	prepareCtx := ctx
	if q.shared {
		prepareCtx = context.WithoutCancel(ctx)
	}
	st, err := q.prepared(prepareCtx, query)
	if err == nil {
		q.txStmts[query] = st
	}
	return st, err
}
