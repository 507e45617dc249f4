package sqlstore

import (
	"context"
	"database/sql"
)

// Writes is how an engine runs its write transactions (Dialect.Writes):
// GroupCommit, the write transactions of concurrent callers run together
// under one commit (sqlite_groupcommit.go), or TxPerCall, a transaction of
// its own for each. Shared code asks the Store's writes, never which one it
// is.
type Writes interface {
	// start makes the store's runner of write transactions.
	start(s *Store) writeRunner
}

// writeRunner runs the store's write transactions (see inTx, inTxAlone,
// inTxOnce, BetweenWrites).
type writeRunner interface {
	// run, runAlone and runOnce run fn in a write transaction, as inTx,
	// inTxAlone and inTxOnce say.
	run(ctx context.Context, fn func(q querier) error) error
	runAlone(ctx context.Context, fn func(q querier) error) error
	runOnce(ctx context.Context, fn func(q querier) error) error
	// single runs fn, one statement's write outside a transaction, given
	// q, the writer's pool.
	single(ctx context.Context, q querier, fn func(q querier) error) error
	// between runs fn on the writer's pool between two write transactions
	// (see BetweenWrites).
	between(ctx context.Context, fn func(context.Context, *sql.DB) error) error
	// opened sets up the querier of a transaction the store just began.
	opened(q *querier)
	// close stops the runner, answering what it holds.
	close()
}

// TxPerCall runs each write in a transaction of its own: for an engine
// whose writers run in parallel (PostgreSQL).
var TxPerCall Writes = txPerCall{}

type txPerCall struct{}

func (txPerCall) start(s *Store) writeRunner { return perCall{s} }

// perCall is TxPerCall's runner.
type perCall struct{ s *Store }

func (p perCall) run(ctx context.Context, fn func(q querier) error) error { return p.s.runTx(ctx, fn) }

func (p perCall) runAlone(ctx context.Context, fn func(q querier) error) error {
	return p.s.runTx(ctx, fn)
}

func (p perCall) runOnce(ctx context.Context, fn func(q querier) error) error {
	return p.s.runTx(ctx, fn)
}

func (perCall) single(_ context.Context, q querier, fn func(q querier) error) error { return fn(q) }

func (p perCall) between(ctx context.Context, fn func(context.Context, *sql.DB) error) error {
	return fn(ctx, p.s.w)
}

func (perCall) opened(*querier) {}

func (perCall) close() {}
