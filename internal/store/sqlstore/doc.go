// Package sqlstore implements store.Store once, over database/sql, for every
// engine. SQL that is the same on every engine lives here, written with
// numbered placeholders ($1, $2, ...) that SQLite and PostgreSQL both read.
// What must differ is declared by each engine package in its Dialect
// (dialect.go): SQL fragments and numbers where only the text differs, and
// strategies where the way of working differs (how statements run, how
// write transactions run, what an upsert or an append does before its
// transaction, the tag window, the timeline fold, the export's open range,
// the merge of delivery logs, how Get Person is read, how an import
// commits). Shared files call the strategy and never ask which engine they
// run on.
//
// A strategy that serves one engine lives in a file named for it:
// sqlite_*.go (the group committer, anonymous parameters, the person cache,
// the tag window's INTERSECT, the fold alone) and postgres_*.go (statements
// by their text, the one-statement creates and appends with their batches,
// batched Get Person, the fold that takes its deltas, the combined outbox
// statements, the lock of a batch's holders), each engine's SQL with it.
// They stay in this package because they run on its querier and Store.
// The engine packages import this one and choose among them; this package
// imports no engine.
//
// The Store is in store.go, its transactions and querier in querier.go.
package sqlstore
