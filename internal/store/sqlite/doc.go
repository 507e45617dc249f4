// Package sqlite is the embedded engine: one file, one writer connection and
// a pool of read-only connections, in WAL mode. It declares SQLite's
// sqlstore.Dialect (dialect.go) and opens the store (OpenWith): the
// migrations, embedded and applied by goose (or, with KeepSchema, checked
// and refused while one is pending, CheckCurrent), the pools, the key sync,
// the checkpointer, the secrets keyring, and the erasures a crash left
// unfinished (sqlstore's FinishErasures), before anything is served. One
// file has one instance, so rate budgets are counted in the process
// (Dialect.Budgets is BudgetsInProcess).
//
// # Writes
//
// SQLite allows one write transaction at a time, and each commit waits for
// the disk. So the store has one writer connection, whose transactions begin
// IMMEDIATE (contention becomes queueing rather than SQLITE_BUSY), and its
// writes go through sqlstore's group committer (Dialect.Writes is
// GroupCommit, sqlite_groupcommit.go): many callers' write transactions
// under one commit, which shares the wait for the disk. A batch runs first
// without savepoints; should a caller fail (or panic), the transaction is
// rolled back and the batch runs again with each caller in a savepoint of its
// own (runGuarded), so that a failure undoes only its caller's work. A
// caller that fills a commit by itself (a batch of persons) runs alone, with
// no savepoint (runAlone), since SQLite copies every page changed under a
// savepoint into its statement journal; callers running alone that are
// queued together share one transaction (runAloneJobs), and an import,
// which reads its input as it goes, shares its transaction with no one
// (runOnce). A batch whose queue runs dry with fewer callers than the last
// one waits a moment for the rest (lingers): callers just answered mostly
// write again, and without the wait a steady load splits into halves that
// take turns, each paying for a sync. The writer does not sleep in SQLite's
// busy wait: the committer polls for the write lock itself (committer.begin),
// and a caller stops waiting at its deadline (committer.submit).
//
// Every connection runs with synchronous(FULL), so an acknowledged write
// survives a power cut, and secure_delete(ON), so an erased person's bytes
// are overwritten in the file (TestErasureLeavesNothingBehind reads the
// files byte by byte). An erasure deletes a person's breadcrumbs in chunks
// of Dialect.EraseChunk, each a transaction of its own, so that it holds the
// write lock no longer than a group commit's batch (see sqlstore).
//
// # Checkpoints
//
// The writer never checkpoints (wal_autocheckpoint(0)): a connection of its
// own does (checkpoint.go), so no write waits while the WAL is copied into
// the database file. PASSIVE checkpoints run beside the writer every so
// often; once the WAL grows long they follow each other until one finds
// little new, and then a RESTART makes the next write start the WAL over,
// which a WAL under constant writes would otherwise never do. The RESTART
// holds the write lock while it copies and syncs, so it runs on the
// writer's own connection between two of its transactions
// (sqlstore.Store.BetweenWrites), copying only the little the PASSIVE ones
// left. Durability does not depend on checkpoints: every commit is synced in
// the WAL.
//
// # Keys and the person cache
//
// The key cache's sync is a change counter (keysync.go): triggers bump the
// one row of key_changes on every change to a key, whichever process made it
// (migration 00021), and each request waits for a read of it that started
// after the request arrived, shared by the requests that arrived meanwhile
// (sqlstore.SharedRead). The same read takes PRAGMA data_version, which
// moves whenever any other connection or process committed anything, and
// then empties the person cache that serves Get Person. The counter is read
// on a connection held for the store's life.
//
// # Faults
//
// faults.go names the driver's faults: a full disk (SQLITE_FULL, ENOSPC),
// an I/O error, the write lock held elsewhere past the busy timeout,
// a file that cannot be opened; SQLITE_BUSY before the caller's deadline is
// a conflict, run again by sqlstore. When another process cuts the WAL index
// (the -shm file) short under this one, every connection of the store is
// closed and opened again (reopen.go), which is how SQLite rebuilds the
// index from the WAL, as after a crash.
//
// # Files and backups
//
// The database file, and a backup's, are created by pds before the driver
// opens them, 0600 in directories it creates 0700 (fs.go, createPrivate),
// since SQLite would make them readable by every local user under the usual
// umask; the WAL and shared-memory files take the database's mode. Backup
// (pds backup) copies a live database with VACUUM INTO, which reads one
// snapshot without holding up the writers, into a file it creates itself
// beside the destination (O_EXCL, a random name), checks it (PRAGMA
// integrity_check), syncs it and names it with a rename that refuses to
// replace a file (rename_linux.go: renameat2 with RENAME_NOREPLACE; else
// link and unlink).
//
// # Plans
//
// SQLite's planner starts from statistics that migration 00010 writes to
// describe accounts of many persons; without them it would take a filter on
// account_id for a few rows and walk whole accounts. An import leaves them
// as they are, since measured ones would describe only the rows at hand.
package sqlite
