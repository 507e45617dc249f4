// Package postgres is the engine for deployments that outgrow one machine:
// any number of instances share one database. Everything that must be shared
// (rate budgets, key changes, bursts, deliveries, leases) lives in the
// database, never in one process (Dialect.Budgets is BudgetsInDatabase:
// rate budgets too). The package declares PostgreSQL's
// sqlstore.Dialect (dialect.go) and opens the store (Open): the migrations,
// the pool, the key cache's sync and the secrets keyring.
//
// # Nothing outlives a transaction
//
// The URL given to Open (--database) may name a pooler in transaction mode
// (PgBouncer), whose server session serves another client once a
// transaction ends. So:
//
//   - no setting is sent at connection (a pooler refuses what it does not
//     know); what a request needs set it sets for its own transaction with
//     set_config(..., true): the read hints, a batch's lock timeout, an
//     import's marker;
//   - statements run by their text (Dialect.Statements is Unprepared) and
//     pgx caches their descriptions per connection
//     (QueryExecModeCacheDescribe); only when Open finds that the URL's
//     connections are sessions of their own (ownsSession: no pooler) are
//     they prepared by name (nameStatements);
//   - the migrations lock with goose's table lock (a row with a lease), and
//     locks of an account are transaction-level advisory locks
//     (Dialect.AccountLock);
//   - a request's deadline is enforced from the client side (below), not by
//     statement_timeout;
//   - no request holds two connections at once.
//
// DirectURL (--database-direct) is optional: the migrations run on it and
// the key cache listens there. TestFleetThroughPgBouncer (cmd/pds) runs many
// clients on one instance through a small server pool.
//
// # The key cache's two ways
//
// Triggers on api_keys (migrations 00021 and 00150) record every change to a
// key in the same transaction. With a session of its own (DirectURL, or a URL
// without a pooler), the cache listens (keywatch.go): the triggers also
// NOTIFY the key's hash, and each request waits for one empty query on the
// listening session, ahead of whose answer the server delivers every pending
// notification; only the key changed is dropped. Behind a pooler it polls
// (keypoll.go): a request waits for a read of the counter of key changes that
// started after it arrived, shared by the requests that arrived meanwhile,
// and the whole cache is emptied when the count moved. Each read also reads
// which server, in which life, answers (lifeColumns), so a failover to a
// standby that lacks some key changes empties the cache too.
//
// # Deadlines and faults
//
// A passed deadline ends the statement on the server too (cancel.go,
// cancelOnDeadline: pgx sends a cancel request, which PgBouncer passes on,
// and the statement is given up a moment later for a frozen server), so that
// a request that gave up leaves no work or lock wait running there; the
// connection is closed afterwards, so that a late cancel cannot end the next
// statement run on it. connect_timeout defaults to a few seconds, less on
// each host of a URL that lists several. faults.go maps SQLSTATEs (a server
// stopping, starting or in recovery, too many connections, a cancelled
// statement, a full disk, a write on a server that takes none) and pgx's
// connection errors to domain causes; deadlocks and serialization failures
// are conflicts, run again by sqlstore.
//
// # A write is acknowledged only once it is durable
//
// With synchronous standbys, a deadline's cancel ends a commit's wait for
// them and PostgreSQL reports the commit done with a WARNING. So every
// statement that commits on the pool (a COMMIT, a statement outside a
// transaction) is checked after it returns (durable.go, confirmingConn,
// which wraps pgx's database/sql connections; noticeSyncCancel marks the
// connection a notice reached) and fails with errCommitUnconfirmed, a
// database_timeout refusal of unknown outcome, when it drew that notice or
// ran past its deadline. Dialect.Confirm lets a call whose batch failed
// confirm that its own write is durable (see sqlstore's batchers).
//
// # Failover
//
// Every connection is checked as it is made (servers.go, watchServers, after
// the URL's target_session_attrs): a read-write server on a timeline older
// than one this process has connected to on the same system is an old
// primary, refused, and pgx tries the next host; the host that passed last
// is tried first (preferLast). What a process learned of timelines lives in
// the process, learnt from every connection and, at Open, from every host of
// the URL (learnTimelines), since the stale server's own database cannot
// know better. A connection that met a read-only transaction (25006) is
// closed, so the pool opens another; refusals for want of a writable primary
// wrap domain.ErrNoPrimary, and Ping checks that the server takes writes
// (Dialect.Writable), so /readyz says which. The failover tests
// (postgres/failover_test.go, cmd/pds/failover_test.go) run a primary and a
// standby of their own (internal/pgcluster); the replica tests
// (replicas_test.go) a primary and two standbys.
//
// # Reads from replicas
//
// Options.Replicas (--database-replica) are streaming standbys of the
// primary, each a pool of its own (replicas.go, replicaSet: sqlstore's
// ReadRouter). sqlstore decides which reads are safe on one; a request's
// context marked by store.MayReadReplica (a GET of the API or the console)
// carries its floor, the primary's WAL insert position read after it
// arrived: by the key cache's sync round (keyPoll's counter read, keyWatch's
// round trip, which then reads the position instead of an empty query), or
// by a read of its own shared by the requests that arrived meanwhile. A
// replica serves the read once its replay position, probed before the read
// and known to only grow within one life of the server (a new life is
// caught at connect, admit), covers the floor; else the read waits a few
// milliseconds, then goes to the primary. A replica that fails a read
// (down, a recovery conflict) hands it to the primary and is passed over
// until the monitor finds it serving. Ping, and so /readyz, asks the
// primary only.
//
// # Where PostgreSQL works its own way
//
// Its writers run in parallel, so sqlstore's lock order matters here; a
// round trip costs more than on an embedded engine, so Upsert Person,
// Append Breadcrumb and Get Person have their one-statement paths and their
// batches (sqlstore's postgres_*.go); persons' last-seen order is kept in
// person_seen (migration 00200) so that appends stay HOT updates; statement
// triggers over transition tables (migration 00180) write one timeline delta
// per bucket a statement moved; breadcrumbs_person leads with person_id
// (migration 00170), since deleting a person checks the breadcrumbs' foreign
// key by person_id alone; an import is one transaction (Dialect.Import is
// ImportAtOnce) and analyzes the tables it wrote once committed.
package postgres
