package sqlstore

import (
	"context"
	"database/sql"
	"iter"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// Dialect is the SQL an engine writes its own way; each engine package
// declares one (sqlite.Dialect, postgres.Dialect). Engines are never told
// apart by name: a query that differs takes its text from here.
type Dialect struct {
	// Name names the engine in logs and in Engine(); no SQL depends on it.
	Name string
	// LockRows ends a SELECT inside a write transaction whose rows the
	// transaction goes on to change, so a concurrent writer waits for it.
	LockRows string
	// ShareRows ends a SELECT whose rows must not change until the
	// transaction ends, without blocking other readers.
	ShareRows string
	// ClaimRows ends the subquery that picks due jobs to lease, so
	// concurrent claimers pass over each other's rows.
	ClaimRows string
	// ClaimDeliveryRows is ClaimRows for the deliveries d of a join.
	ClaimDeliveryRows string
	// InsertParams bounds the parameters of one multi-row INSERT of an
	// import: PostgreSQL pays a round trip per statement, so its statements
	// are long.
	InsertParams int
	// Statements says how a statement's text is run: sqlstore.Unprepared
	// (by its text) or sqlstore.BareParams (prepared, its parameters
	// anonymous).
	Statements Statements
	// EraseChunk, when set, bounds the breadcrumbs one transaction of an
	// erasure deletes (SQLite: a transaction holds the one write lock, and
	// a chunk holds it no longer than a group commit's batch); zero erases
	// a person in one transaction whatever it holds (see erasures.go).
	EraseChunk int
	// AnalyzePersons, when set, refreshes the planner's statistics of
	// persons as an import grows the table (see analyzePersons).
	AnalyzePersons string
	// AnalyzeTables, followed by a list of tables, refreshes the planner's
	// statistics of those tables; an import runs it once it has committed
	// (see analyzeTables). Empty where the planner takes nothing from a
	// bulk write.
	AnalyzeTables string
	// TagPairsAgg aggregates a person's live tags (pt, t) as a JSON array
	// of [id, name] pairs ordered by pt.created_at, t.id; FieldValuesAgg
	// its custom field values (f, v) as a JSON object of key to value. Get
	// Person reads both in its one statement (see personWithDetailsSQL).
	TagPairsAgg, FieldValuesAgg string
	// Writes says how write transactions run: sqlstore.GroupCommit (those
	// of concurrent callers together, under one commit: for an engine whose
	// writes take turns on one connection anyway, so that they share the
	// wait for the disk) or sqlstore.TxPerCall (one transaction per call,
	// for an engine whose writers run in parallel).
	Writes Writes
	// Upserts is what an Upsert Person does before its transaction:
	// sqlstore.CreateUnlessHeld (create, or decide on a holder, in one
	// statement each) or sqlstore.LookUpBesideWriter (read the holders on a
	// reader, sparing the one writer the lookup).
	Upserts Upserts
	// Appends says whether an append of a breadcrumb may skip its
	// transaction: sqlstore.AppendInOneStatement (one statement, the
	// concurrent ones together, where a WITH clause may write and a round
	// trip costs the most) or sqlstore.AppendInTx.
	Appends Appends
	// Outbox is how a person write reaches its outbox row:
	// sqlstore.OutboxCombined (its statements put together, where a WITH
	// clause may write) or sqlstore.OutboxApart (a statement each).
	Outbox Outbox
	// RowVersion is a column that changes with every write of its row
	// (PostgreSQL's xmin), read as text, and RefuseStale an expression that
	// fails its statement with SQLSTATE staleState. With both, a matched
	// upsert decides on rows read without a lock and writes them in one
	// statement only if neither changed since it read them (matchHeld).
	RowVersion, RefuseStale string
	// TagWindows reads the holders of every one of a list of tags within a
	// window: sqlstore.IntersectTags (an INTERSECT of the tags' index ranges,
	// for a planner that merges one in a pass) or sqlstore.JoinTags (a
	// semi-join, the join left to the planner).
	TagWindows TagWindows
	// Fold folds a chunk of timeline deltas, those up to the id last, into
	// their buckets: sqlstore.FoldTaking (one statement takes exactly the
	// deltas it counts, while writers run alongside) or sqlstore.FoldAlone
	// (the fold's transaction is the only writer).
	Fold func(ctx context.Context, q querier, last int64) error
	// Gets reads Get Person's person: sqlstore.BatchedGets (the calls that
	// arrive together as one statement, for an engine where each statement
	// is a round trip to a server process) or sqlstore.OneByOne.
	Gets PersonGets
	// NewPersonOrd is the value that numbers a person a write inserts
	// (persons.ord): SQLite's trigger would number it by rewriting the row
	// just inserted, its index entry with it.
	NewPersonOrd string
	// ImportOrds hands an import $1 new numbers for its persons
	// (persons.ord, see tag_bits.go), in ascending order: the import writes
	// the tag bits of its new links itself, by those numbers. On SQLite it
	// also spares each new person the trigger that numbers a person by
	// rewriting the row just inserted.
	ImportOrds string
	// ImportMarkOn and ImportMarkOff bracket an import's multi-row INSERTs
	// of new persons and their links: in between, the triggers that derive
	// rows from them (the persons timeline's and the links' tag bit deltas)
	// skip them, and the import writes those rows itself, a few per chunk
	// instead of one per person or link. SQLite marks with a row in
	// import_writes, PostgreSQL with the transaction's pds.import_writes
	// setting.
	ImportMarkOn, ImportMarkOff string
	// Import runs pds import persons over its lines: sqlstore.ImportInChunks
	// (each chunk committed on its own, for an engine whose one writer
	// would otherwise keep every other write waiting for the whole import)
	// or sqlstore.ImportAtOnce (one transaction, all or nothing, while the
	// other writes go on). On failure it answers what the import reports.
	Import func(ctx context.Context, s *Store, im *personImporter, lines iter.Seq2[store.PersonImport, error]) (store.PersonImportResult, error)
	// SerialFold, when set, is run first in the transaction that folds
	// tag bits, and by an import before it writes bits, so that one writer
	// at a time changes tag_bits: a link made and then broken must reach
	// its word in that order, two folds taking turns on a word could apply
	// them the other way round, and a chunk read by one and written back
	// after another's write would undo it.
	SerialFold string
	// MergeJoinTags, when set, is run in a tag filter's read transaction
	// before its statements, so that the planner joins the tags' index
	// ranges by merging them in list order. Estimating one account that
	// fills the table, PostgreSQL would rather hash two sequential scans,
	// which in a large account costs far more than the merge.
	MergeJoinTags string
	// JoinsAsWritten, when set, is run in a read transaction before
	// statements whose joins are written in the order to walk them, each
	// table after the first probed by its index once per row (an export's
	// tags and values: the chunk's persons, then each one's rows). Without
	// it PostgreSQL, estimating a few hundred persons, would rather hash
	// every tag row of the account.
	JoinsAsWritten string
	// SeenOrder is the table whose index on (account_id, last_seen_at, id)
	// orders a window's persons: persons itself when empty (SQLite, which
	// rewrites only the index entries of the columns an update changes), or
	// a narrow table kept beside it (PostgreSQL's person_seen, see its
	// migration 00200), holding those three columns of every person.
	SeenOrder string
	// OpenRange is the condition on persons p of an export's open range,
	// the account's persons after after (account is the account's
	// placeholder in args): sqlstore.RowValueRange, for a planner that seeks
	// to a row value bound such as (account_id, id) > ($1, $2) in an index
	// on those columns when no equality on account_id stands beside it, or
	// sqlstore.ScalarRange, for one that reads a row value as a filter. See
	// exportRange.
	OpenRange func(args *sqlArgs, account, after string) string
	// MergeArms are the arms of a union of ordered index ranges, the
	// deliveries of each where of wheres, which the page merges (see
	// ListAccountDeliveries): sqlstore.BoundedArms, each range a subquery
	// with its own ORDER BY armOrder and LIMIT reach, for a planner that
	// merges only such ranges, or sqlstore.PlainArms, for one that merges
	// the ranges themselves and would sort each bounded subquery again.
	MergeArms func(args *sqlArgs, wheres []string, armOrder string, reach int) []string
	// ReadSnapshot opens a read transaction whose statements all see one
	// snapshot (a list's total and its page must agree).
	ReadSnapshot *sql.TxOptions
	// Budgets is where a key's rate budget is counted: BudgetsInDatabase
	// where any number of instances may serve from one database
	// (PostgreSQL), BudgetsInProcess where the one file has one instance
	// (SQLite).
	Budgets BudgetPlace
	// Conflict names the conflict with a concurrent transaction an error
	// of the engine's driver reports (ConflictDeadlock, ...), after which
	// the transaction is rolled back whole and may run again; "" for any
	// other error (see retryingConflicts).
	Conflict func(err error) string
	// LockPerson ends the SELECT with which a write locks a person's row
	// before anything else it touches of the person (see lockPersons): a
	// lock that conflicts with every other writer of the row but not with
	// the foreign-key checks of rows that refer to it (PostgreSQL's FOR NO
	// KEY UPDATE, which is what the UPDATE of a person takes anyway).
	LockPerson string
	// AccountLock, given a key naming an account and a purpose ($1), takes
	// a lock on that key until the transaction ends (PostgreSQL's
	// transaction-level advisory locks): the writes of one account that
	// check a count or a uniqueness before inserting take turns on it,
	// while every other write of the account goes on (see lockAccount).
	// Empty where write transactions are exclusive already.
	AccountLock string
	// Changes places and passes the entries of the change feed
	// (person_changes.go).
	Changes ChangeFeed
	// Unavailable names the fault an error of the engine's driver reports
	// when the database cannot serve for now (unreachable, out of disk,
	// too slow), or "" when the error is anything else (see Classify).
	Unavailable func(err error) domain.Cause
	// NoPrimary says an error of the engine's driver means that the
	// servers answer but none takes writes (Classify wraps
	// domain.ErrNoPrimary in its refusal), and Writable is a statement
	// answering whether the server behind the writer's pool takes writes
	// (Ping); both unset where one database file takes every write.
	NoPrimary func(err error) bool
	Writable  string
	// Confirm is a statement whose commit returns once what the server
	// committed before it is as durable as the server's settings ask (its
	// synchronous standbys have it), and fails otherwise: the answer of a
	// call that finds its own write of a batch whose answer was lost
	// (confirmDurable). Empty where a commit is the whole of durability.
	Confirm string
}

// BudgetPlace is where rate budgets are counted (Dialect.Budgets).
type BudgetPlace int

const (
	// BudgetsInProcess: one instance serves the database, and counts
	// budgets in memory, sparing every request a statement.
	BudgetsInProcess BudgetPlace = iota + 1
	// BudgetsInDatabase: the instances serving one database count them
	// in it, together.
	BudgetsInDatabase
)
