package domain

import "time"

// ChangePosition is a place in an account's change feed (GET
// /persons/changes): the entries after it are what a follower has yet to
// read. Its fields are the store's; clients hold it as an opaque cursor.
type ChangePosition struct {
	// Seq is the last entry passed: SQLite numbers entries in the order
	// their writes committed (its one writer takes turns), so that is all
	// a position is there.
	Seq int64
	// On PostgreSQL, whose writers commit in any order, the entries are
	// read a batch at a time: those of the transactions a snapshot (Cut)
	// sees and an earlier one (Base) did not, by transaction (Xid) then
	// Seq within it. Base and Cut are pg_snapshot as text; Base "" is
	// before every transaction, Cut "" a batch not begun.
	Xid       uint64
	Base, Cut string
}

// PersonChange is one entry of the change feed: a person at its latest
// change, or the tombstone of one erased (or merged into another).
type PersonChange struct {
	Position ChangePosition
	PersonID string
	// Person is the person as it stands at the read; nil for a tombstone.
	Person *Person
	// Deleted is the tombstone: when, and (a merge) into whom.
	Deleted *PersonDeletion
}

// PersonDeletion is what a tombstone of the feed tells: never an
// identifier or an attribute of the person.
type PersonDeletion struct {
	At         time.Time
	MergedInto *string
}

// Bounds of the change feed's reads.
const (
	DefaultChangesSize = 100
	MaxChangesSize     = 100
	// MaxChangesWait bounds how long a read with nothing after its
	// cursor may wait for a change (GET /persons/changes?wait=).
	MaxChangesWait = 30 * time.Second
	// MaxChangesWaiters bounds the reads of one key that wait at once.
	MaxChangesWaiters = 10
)

// CursorExpiredProblemType is the problem type of a CursorExpiredError.
const CursorExpiredProblemType = "urn:pds:problem:cursor_expired"

// CursorExpiredError is a 410: the cursor was issued longer ago than the
// feed keeps its tombstones, so a follower from it may have missed an
// erasure.
type CursorExpiredError struct {
	Issued    time.Time
	Retention time.Duration
}

func (e *CursorExpiredError) Error() string {
	return "The cursor was issued at " + e.Issued.UTC().Format(time.RFC3339) + ", longer ago than the feed keeps tombstones (" +
		e.Retention.String() + "): erasures since may be gone from it. Export again (GET /persons/export) and follow from " +
		"its Pds-Changes-Cursor."
}
