package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"slices"

	"github.com/pds-dev/pds/internal/domain"
)

// The lock order. On an engine whose writers run in parallel (PostgreSQL)
// every write that touches persons takes its row locks in this order, so
// that no two writers can each hold a lock the other waits for:
//
//  1. the account's advisory lock, only for the writes that check a count
//     or a uniqueness of the account before inserting (lockAccount: an
//     import, a new custom field), never the account row itself, whose
//     key every new person and breadcrumb must be able to share;
//  2. the persons' rows, by id (lockPerson, lockHolders, a merge's two),
//     before anything else of them; on PostgreSQL a person's person_seen
//     row is written only by the triggers of persons (migration 00200),
//     under the person's row;
//  3. their tag links, in tag id order (AddPersonTags sorts the ids; the
//     persons_seen_moved trigger moves a person's links only under its row);
//  4. their custom field values;
//  5. their outbox rows (bursts), by person id, and the rows derived by
//     triggers (timeline and tag bit deltas, which are only inserted).
//
// An erasure (erasures.go) takes its person's row first, FOR UPDATE since
// it deletes it (new breadcrumbs and links of the person, whose foreign
// key checks take KEY SHARE, wait for it), then deletes its breadcrumbs,
// tag links, custom values and outbox row in that order, then reads the
// account's subscriptions FOR SHARE (for its person.deleted deliveries, as
// the worker's close does after its outbox rows), then writes its
// deliveries: subscriptions before deliveries, as the recorder locks them. A writer that matched the person before the erasure and finds it
// gone at its own lock runs again (ConflictErased).
//
// A merge (person_merge.go) takes both persons' rows first, in id order,
// whichever survives: the survivor's FOR NO KEY UPDATE (it is updated), the
// merged person's FOR UPDATE (it is deleted, so that its new breadcrumbs
// and tag links wait, then find it gone and run again onto the survivor,
// as after an erasure). Then, in the order above: the merged person's
// breadcrumbs move; its tag links are copied to the survivor in tag id
// order and deleted; its custom values likewise, by field id; both outbox
// rows are locked in person id order, the merged person's deleted and the
// survivor's written by its change; then the subscriptions FOR SHARE and
// the person.merged deliveries, as an erasure writes its own. The rows of
// the ids the merged person absorbed (its aliases, merge records and feed
// entries) have no person row of their own; they are written only under
// the lock of the person they resolve to, which the merge holds.
//
// A batch or an import's chunk locks, with the holders of its identifiers,
// the survivors its identifiers resolve to as aliases (holdersLockQuery):
// an item matched through an alias writes the survivor, which would
// otherwise be locked by that item alone, out of the batch's order.
//
// The webhook worker's close takes outbox rows first, by person id, but a
// batch's close never waits for one a writer holds (lockBursts skips it;
// the worker closes it on its own afterwards, waiting then for that row
// alone), then subscriptions FOR SHARE by id, then inserts deliveries. The
// appender's batches (postgres_append_batch.go) update their persons in
// the plan's order, bounded by batchLockTimeout. A lock taken out of this
// order anyway (an identifier that moved to another person between a batch's
// locks and its write) can only make a deadlock, which PostgreSQL breaks by
// failing one transaction, and retryingConflicts runs it again.

// lockPerson locks the row of the person a write is about, before anything
// else of the person, and reports a domain.NotFound when the account holds
// no such person (a *domain.MergedError when it was merged into another). On SQLite, whose one writer runs one write transaction at
// a time, it is the existence check alone.
func lockPerson(ctx context.Context, q querier, accountID, id string) error {
	var one int
	err := q.queryRow(ctx, `SELECT 1 FROM persons WHERE account_id = $1 AND id = $2`+q.s.dialect.LockPerson,
		accountID, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return notFoundOrMerged(ctx, q, accountID, id)
	}
	return err
}

// lockHolders locks, in id order, the persons of the account that hold any
// of the identifiers, then their outbox rows in the same order: a write of
// several persons (a batch, a chunk of an import) takes them all before
// writing any, as two batches listing the same persons in other orders
// would otherwise each hold one the other waits for. Nothing to do where
// writes do not run in parallel.
func lockHolders(ctx context.Context, q querier, accountID string, items []domain.Identifiers) error {
	if q.s.dialect.LockPerson == "" {
		return nil
	}
	query, args := holdersLockQuery(accountID, items, q.s.dialect.LockPerson)
	if query == "" {
		return nil
	}
	held, err := queryAll(ctx, q, scanString, query, args...)
	if err != nil || len(held) == 0 {
		return err
	}
	var a sqlArgs
	_, err = queryAll(ctx, q, scanString, `SELECT person_id FROM bursts WHERE person_id IN (`+a.list(anySlice(held)...)+`)
		ORDER BY person_id`+q.s.dialect.LockRows, a...)
	return err
}

// sortedTags is the order Add Person Tags links tags in (tag id order), a
// copy: the request's order stays the response's.
func sortedTags(ids []string) []string {
	return slices.Sorted(slices.Values(ids))
}

func scanString(sc scanner) (string, error) {
	var s string
	err := sc.Scan(&s)
	return s, err
}
