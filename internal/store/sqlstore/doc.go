// Package sqlstore implements store.Store once, over database/sql, for every
// engine. SQL that is the same on every engine lives here, written with
// numbered placeholders ($1, $2, ...) that SQLite and PostgreSQL both read;
// a query built piece by piece numbers its arguments with sqlArgs. What must
// differ is declared by each engine package in its Dialect (dialect.go): SQL
// fragments and numbers where only the text differs, and strategies where
// the way of working differs (how statements run, how write transactions
// run, what an upsert or an append does before its transaction, the tag
// window, the timeline fold, the export's open range, the merge of delivery
// logs, how Get Person is read, how an import commits). Shared files call the
// strategy and never ask which engine they run on.
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
// The reads a replica may serve (PostgreSQL's --database-replica) are
// decided here, in the methods that read through safeRead, safeReadTx, the
// Get Person batch and OpenExport (replica_reads.go); the engine's
// ReadRouter says where each runs. Every other read uses s.reader().
//
// # Errors
//
// Every exported method of *Store that can fail begins with
// defer named("Method", &err) (errors.go): a failure comes back as an *OpError that reads
// "sqlstore: Method: cause", its cause still reachable with errors.Is and
// errors.As, so that a 500 in the log says which operation failed. A
// refusal about the input (domain.IsRefusal: a 400, 404 or 409 whose words
// a client reads) and a refused key pass unchanged.
//
// Faults are classified once, where the driver is known: each engine names
// its driver's faults (Dialect.Unavailable), and Store.Classify turns an
// error into a *domain.UnavailableError with its domain.Cause (unreachable,
// timeout, disk full, disk error), a passed deadline included; a refusal for
// want of a writable primary also wraps domain.ErrNoPrimary. Every error a
// method returns may be classified; callers (the API, the console, the
// webhook worker, /readyz) do so before anything else.
//
// # Transactions
//
// Writes run through inTx (a write transaction; on SQLite a savepoint of a
// group commit), inTxAlone (for a caller that fills a commit by itself) and
// inTxOnce (for a function that consumes its input and cannot run twice, an
// import); reads that must agree with each other (a list's total and its
// page) run in one snapshot, inReadTx. A function given to inTx may run more
// than once, all runs but the last rolled back, and sets its results afresh
// on each. Every statement runs under its caller's context, its
// preparation included (querier.txStatement); only the group committer's
// shared transaction prepares beyond one caller's deadline, so that one
// caller leaving does not break the others'.
//
// # Writers that meet: one lock order, one retry
//
// Concurrent writers of one person are the normal case (a sync job and a
// tracker at once). On PostgreSQL, whose writers run in parallel, every write
// that touches persons takes its locks in the one order written at the top
// of lock_order.go: the account's advisory lock, only where a count or a
// uniqueness of the account is checked (lockAccount: an import, a new custom
// field; never the account row, whose key every new person and breadcrumb
// shares); the persons' rows by id (lockPerson, lockHolders for a batch or
// an import's chunk, all before any is written, the survivors its
// identifiers resolve to as aliases among them; a merge's two persons);
// their tag links in tag id
// order; their custom values; their outbox rows. Dialect.LockPerson is FOR
// NO KEY UPDATE, the lock an UPDATE of the person takes anyway, which leaves
// the foreign-key checks of rows referring to the person free. An erasure
// takes its person's row FOR UPDATE first (new breadcrumbs and links of the
// person must wait), then what hangs from it in the order above, then the
// subscriptions FOR SHARE and then deliveries, as the recorder locks them;
// the worker's close never waits for an outbox row a writer holds
// (lockBursts skips it, and the worker closes that burst on its own later).
//
// What still collides (an identifier that moved between a batch's locks and
// its write, two creates of one new identifier in opposite orders) is
// settled in one place, retry.go: inTx and inTxAlone run a transaction that
// failed for a conflict with another (Dialect.Conflict: a deadlock, a
// serialization failure, SQLITE_BUSY; or ConflictErased, errPersonErased,
// when the person it matched was erased meanwhile) again from the start, a
// bounded number of times with a random, doubling wait (retryingConflicts),
// counted in Store.Retries (pds_db_retries_total). A conflict that outlasts
// the runs is a domain.CauseContention refusal, a 503 with Retry-After. Only
// inTxOnce never runs its function again. storetest's contention cases and
// httpapi's contention test hold it, on both engines.
//
// # A person change and its outbox
//
// Every creation and change of a person goes through changeAndRecord
// (person_outbox.go), inside one transaction: changePerson's own (it takes a
// personWrite: the account, what to apply, how to read the person back), or
// a batch's, once per item. It applies the write and, in the same
// transaction, records it (recordChange): the stamps service.StampsFor
// decides and, for an event, the person's row in bursts (the outbox) as
// service.BurstAfterChange decides. So a change that commits is in the
// outbox, and a rolled-back one is not. Upsert Person is upsertAndRecord
// around applyUpsert, which matches (service.UpsertTarget), checks the
// identifiers' suppression and writes; a batch runs upsertAndRecord per
// item, and an import applyUpsert and recordChange for a line that matches,
// while it writes new persons with their outbox rows in the multi-row
// INSERTs of its chunk, in the chunk's transaction. recordChange writes a patch's new attributes in the same
// UPDATE as its stamps and assigns only the columns whose values changed
// (changedAttributes), since SQLite rewrites the index entry of every column
// an UPDATE assigns; on PostgreSQL that UPDATE also reads and locks the
// outbox row it decides on (Dialect.Outbox).
//
// On PostgreSQL, where a round trip costs the most, three writes may skip
// the transaction, each one statement that writes the person and its outbox
// row together, atomic as any statement:
//
//   - Upsert Person without custom values first runs createUnlessHeld
//     (postgres_create.go): it looks up the identifiers' holders and, only
//     when there are none, inserts the person and its outbox row in
//     data-modifying WITH clauses. Finding holders, the upsert runs in its
//     transaction and decides on them; a lost race on an identifier fails it
//     unique and it runs again (retryingUnique).
//   - A matched upsert without custom values (matchHeld, person_match.go):
//     the create's statement has read the holder and its outbox row with
//     their row versions (Dialect.RowVersion); Go decides as the transaction
//     would, and one statement writes both only if they are still those
//     versions (Dialect.RefuseStale). Writing nothing, the upsert runs in its
//     transaction.
//   - Append Breadcrumb for the holder of its one identifier
//     (appendToHolder, postgres_append.go) inserts the breadcrumb and moves
//     the holder's last seen time, which is all such a breadcrumb records
//     (no event). Anything else (nobody holds it, several identifiers, a
//     person_id, campaign or project, a replayed id) runs in the transaction.
//
// Concurrent creates, appends and Get Person calls share one statement: each
// is a batcher (batch_calls.go) that runs the calls arriving while a batch
// is under way as the next batch, one commit for all (createManyQuery,
// appendManyQuery, postgres_get_batch.go). A batch that fails commits
// nothing and its calls run one by one as above; its lock waits end at
// batchLockTimeout, so it gives up rather than deadlock, and its statement is
// cancelled once none of its callers waits any more. A batch that failed
// may still have committed (its connection lost at the commit): each call
// run alone tells its own earlier write by the id it carries, and answers it
// done once Dialect.Confirm says the commit is durable.
//
// # The key cache
//
// Neither the key nor the person read costs a statement of its own on most
// requests. Keys are cached (keycache.go) by the hash of their secret; each
// engine keeps the cache true with a KeySync (Store.CacheKeys) that must
// vouch, per request, that every key change committed before the request
// arrived is in the cache, and when it cannot the key is read through the
// unique index. Triggers on api_keys (and on suppressions, which the key's
// read reports) count every change, whichever process made it; a read of
// the count that started after the request arrived is shared by every
// request that arrived while the last one ran (SharedRead). Expiry is
// checked on every request, only keys found are cached, and entries are read
// again after a few seconds whatever the KeySync says. How each engine
// syncs is told in its package.
//
// Get Person is one statement: the person with its tags and custom values
// aggregated as JSON by the engine's own functions (Dialect.TagPairsAgg,
// FieldValuesAgg; personWithDetailsSQL); a lookup by email or external_id is
// the same statement keyed by that unique column (lookupPersons). SQLite
// serves it from a person cache while nothing is committed
// (sqlite_personcache.go, emptied when PRAGMA data_version moves);
// PostgreSQL batches the calls (Dialect.Gets is BatchedGets).
//
// # Erasure and suppression
//
// ErasePerson (erasures.go) locks the person as a DELETE would, deletes its
// breadcrumbs with the timeline deltas that keep the counts exact, then its
// tag links (the tag-bit trigger needs the person row, so they go first),
// custom values, outbox row and pending deliveries (never attempted: gone;
// retrying: failed); replaces the stored bodies and attempt headers of its
// earlier deliveries by markers (domain.DeletedBody); clears its identifiers
// from every other breadcrumb of the account that names them (clearNamed);
// deletes the person; and writes the erasure record, the suppressions and
// one person.deleted delivery per active subscription that lists it, due at
// once. The persons merged into it are erased with it (eraseMerged): their
// aliases, their merge records, the markers in their earlier deliveries,
// and an erasure record each (erased_with naming the person; not listed),
// so that no redelivery sends a marker where a delivery of theirs was. On PostgreSQL it is one transaction (Dialect.EraseChunk is 0). On
// SQLite, where every transaction holds the one write lock, the breadcrumbs
// go in chunks of their own transactions (erasePart): the first chunk that
// leaves some behind writes an erasure_purges row and the last deletes it,
// and FinishErasures, run as the store opens, finishes any a crash left, so
// a person ends erased, never half. The background fold waits while an
// erasure runs.
//
// A suppression (suppressions.go) is an HMAC-SHA256 of kind, NUL and the
// identifier in its normal form (a phone by its digits) under the account's
// secret (domain.SuppressionHash; the secret is made by the first suppressing
// erasure, read once per process and kept, since it never changes). Every
// write that takes identifiers checks them in its own transaction, in the
// statement that reads their holders (holdersAndSuppressed; refuseSuppressed
// where the holders were read before; suppressedAt for an import chunk),
// whatever its caller knew of the account: in one statement both reads see
// one snapshot, so a write meets either the person holding an identifier or
// its suppression, never neither. The check comes after the body's other
// checks, so a bad body answers the same whatever its identifiers. On
// PostgreSQL the one-statement creates answer a holder with an empty id
// while the account holds any suppression (suppressingMark), which sends the
// write to the transaction, and matchHeld writes nothing then. A write whose
// matched person an erasure deleted under it fails with ConflictErased and
// runs again, matching or creating afresh. storetest's erasure cases and
// httpapi.TestNoSuppressedIdentifierChangesHands hold it.
//
// # Secrets at rest
//
// The secrets the database holds (webhooks' secret, previous_secret and
// headers, webhook_secrets, suppression_secrets) pass through the store's keyring
// (sealed.go, internal/secrets), set by Store.UseSecretsKeys from the
// engine's Options.Secrets: sealed as they are written, opened as they are
// read, each for its place (webhook:<id>, suppression:<account id>), so that
// nothing above the store sees a sealed value. ResealSecrets rewrites, in one
// transaction whose reads lock the rows, every secret not sealed under the
// first key: pds serve those in clear as it starts, pds secrets rotate-key
// all. Without a key the store writes them in clear and a sealed one fails
// where it is read. storetest's secrets_sealed holds it.
//
// # How a list stays fast at a million rows
//
// Every hot request reads a bounded index range; TestHotQueryPlans explains
// every query the hot reads send and holds their plans.
//
//   - Totals and deep pages of List Persons (window mode) and List
//     Breadcrumbs come from per-account timelines (timeline.go): counts of
//     rows per bucket of 1 ms, 64 ms, 64² ms ... of last-seen or activity
//     time. Triggers append a delta for every change, so no write path can
//     forget one (on PostgreSQL statement triggers, one delta per bucket a
//     statement moved); a background fold (timeline_fold.go, Dialect.Fold)
//     moves deltas into timeline_counts, and readers add the deltas not yet
//     folded, so counts are exact either way. A total is a few bucket sums; a
//     deep page steps down one level at a time to the millisecond that holds
//     its first row. A list runs in one snapshot, so its total and its page
//     agree; TestTimelineListsMatchCounting compares every answer with plain
//     COUNT and OFFSET.
//   - The window's order is an index on (account_id, last_seen_at, id)
//     (Dialect.SeenOrder): of persons on SQLite; on PostgreSQL of
//     person_seen, a narrow table the triggers of persons keep, so that a
//     moved last-seen time does not make every append a new row version
//     with an entry in each index of persons (it stays a HOT update).
//   - The tag filter reads person_tags, whose rows carry their person's
//     last-seen time (kept by a trigger): each tag's holders in the window
//     are one index range in list order, merged by the engine
//     (Dialect.TagWindows: SQLite's INTERSECT, PostgreSQL's merge join,
//     which Dialect.MergeJoinTags makes the planner choose). A page past the
//     middle is read from the far end and turned round (spanOf,
//     tagWindowPage). All of a tag's holders come from tag bits
//     (tag_bits.go): a bitmap over persons.ord, a row per 4,096 persons,
//     ANDed in Go, kept by deltas as the timelines are and folded one fold
//     at a time (Dialect.SerialFold, since setting and clearing a bit do not
//     commute).
//   - The delivery log is filtered through indexes that lead with the
//     subscription and the filtered column, then hold the log's order, so a
//     filtered page and its exact total are read in the index alone; the
//     account is checked once, on the webhooks row (ofSubscription). An
//     account's log of every subscription (ListAccountDeliveries) merges
//     each one's range (Dialect.MergeArms).
//   - An account's counts (AccountCounts) are the timelines' totals and the
//     pending deliveries counted in each subscription's status index, up to
//     store.PendingBound.
//   - Ids begin with their creation time in milliseconds (domain.NewID,
//     domain.NewDeliveryID), so every primary key grows at its right edge
//     instead of dirtying a random page per insert.
//   - Plans: SQLite starts from statistics written by a migration that
//     describe large accounts (without them it would walk whole accounts);
//     PostgreSQL plans on what ANALYZE measured, so every import, once
//     committed, analyzes the tables it wrote (statistics.go,
//     Dialect.AnalyzeTables).
//
// An import (person_import.go, Dialect.Import) takes its persons' ords
// itself (Dialect.ImportOrds) and writes their tag bits and timeline deltas a
// few rows per chunk, behind a marker (Dialect.ImportMarkOn) that the
// per-row triggers heed; it holds Dialect.SerialFold from its first bits
// until it commits.
//
// # The change feed
//
// GET /persons/changes reads person_changes: one row per person, kept by
// triggers in the statement that writes the person, its tag links or its
// custom values (migration 00240 of each engine), so that no write path can
// forget it; activity alone never moves a person. A batch or an import
// renumbers its persons in the order of its items (reorderChanges). Reading
// is person_changes.go; what differs is Dialect.Changes. SQLite has one
// writer, so a counter taken in the writing transaction is commit order.
// PostgreSQL's writers run in parallel, so no number taken in a transaction
// is: each entry carries its transaction's id (xid8), a cursor carries two
// snapshots, and a page passes the entries of transactions visible in the
// later and not in the earlier, as PgQ cuts its batches, so a transaction
// still running at a cut is read in a later page whatever its id. The export
// opens one read transaction for all its chunks (OpenExport) and reports
// that snapshot's position, so following the feed from it returns exactly
// what committed after.
//
// # Batches, the export and the report
//
// UpsertPersons (person_batch.go) runs a batch in one transaction, first
// with no savepoint at all (SQLite copies every page changed under a
// savepoint into its statement journal); when an item is refused or loses a
// race on an identifier, the transaction is rolled back and the batch runs
// again with a savepoint per item, so only refused items are undone.
// ExportPersons and the export's chunks (person_export.go) are a keyset range
// of persons_account_id (account_id, id), the filters checked on each row
// walked (an index on last_seen_at would sort every chunk), then the
// chunk's tags and values in one statement each over the same range
// (Dialect.JoinsAsWritten, Dialect.OpenRange), and its survivors' aliases
// in one range of person_aliases over the chunk's ids (exportAliases). The person report
// (person_report.go) reads a person's record in one snapshot, then its
// breadcrumbs and deliveries as keyset pages, never an OFFSET, the bound
// written as scalars both engines seek to.
//
// # The webhook tables
//
// The worker's durable work is rows with leases: ClaimBursts and CloseBursts
// (outbox.go), ClaimDeliveriesFairly, FinishAttempts, ReleaseDeliveries and
// the redeliveries (deliveries.go: requeue, one rule for Redeliver and
// RedeliverFailed), the hourly attempt counts (attempt_counts.go). A claim
// that failed may have leased its rows all the same: its token is kept and
// the next claim hands that lease back first (lost_leases.go). The
// transaction of FinishAttempts that deactivates a subscription also makes
// the account's webhook.disabled deliveries (webhook_disabled.go), once
// per deactivation as the locked row's is_active tells; delivered_states
// (delivered_states.go) keeps what changes compares with, written only
// while its person exists. How the worker uses them is told in
// internal/webhook.
package sqlstore
