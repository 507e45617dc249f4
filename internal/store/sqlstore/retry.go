package sqlstore

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

// Conflicts between concurrent transactions: PostgreSQL breaks a deadlock by
// failing one of its transactions (40P01), and a serializable transaction
// that could not be ordered with the others fails too (40001); SQLite
// answers SQLITE_BUSY when another connection or process holds the write
// lock. Each failed transaction was rolled back whole: nothing of it is
// committed, and nothing of it reached the caller, so running it again from
// the start is what the caller would have got had it come a moment later.
// The transaction helpers (inTx, inTxAlone) and the few writes that run as
// one statement outside a transaction (retryingConflicts) do it here, and
// nowhere else.

// The conflicts an engine names (Dialect.Conflict), the label of
// pds_db_retries_total, and RetryExhausted for the retries given up.
const (
	ConflictDeadlock      = "deadlock"
	ConflictSerialization = "serialization"
	ConflictBusy          = "busy"
	// ConflictErased: the person a write matched was erased before the
	// write could lock it (errPersonErased, or on PostgreSQL a breadcrumb
	// or link whose person row went: a foreign key violation). Run again,
	// the write matches or creates afresh, as it would have a moment later.
	ConflictErased = "erased"
	RetryExhausted = "exhausted"
)

// errPersonErased fails a write transaction whose matched person an
// erasure deleted meanwhile; retryingConflicts runs it again.
var errPersonErased = errors.New("sqlstore: the person matched was erased meanwhile")

// conflictAttempts bounds the runs of one transaction that keeps losing to
// others. With writers locking in one order a deadlock is rare and a second
// run almost always wins; ten runs of the waits below end within about
// 0.2 s, well inside a request's deadline.
const conflictAttempts = 10

// retryWait is the longest wait before the next run, doubling from
// retryFirstWait with each run up to retryMaxWait; the wait is a random
// part of it, so that the losers of one collision do not meet again.
const (
	retryFirstWait = time.Millisecond
	retryMaxWait   = 32 * time.Millisecond
)

// retryCounts counts retries by conflict, and the transactions given up.
type retryCounts struct {
	deadlock, serialization, busy, erased, exhausted atomic.Uint64
}

func (c *retryCounts) add(cause string) {
	switch cause {
	case ConflictDeadlock:
		c.deadlock.Add(1)
	case ConflictSerialization:
		c.serialization.Add(1)
	case ConflictBusy:
		c.busy.Add(1)
	case ConflictErased:
		c.erased.Add(1)
	case RetryExhausted:
		c.exhausted.Add(1)
	}
}

// Retries reports how many transactions were run again, by the conflict
// that failed them, and how many were given up (RetryExhausted), since the
// store opened.
func (s *Store) Retries() map[string]uint64 {
	return map[string]uint64{
		ConflictDeadlock:      s.retries.deadlock.Load(),
		ConflictSerialization: s.retries.serialization.Load(),
		ConflictBusy:          s.retries.busy.Load(),
		ConflictErased:        s.retries.erased.Load(),
		RetryExhausted:        s.retries.exhausted.Load(),
	}
}

// retryingConflicts runs attempt, a transaction or a statement that is
// rolled back whole when it fails, and runs it again while it fails for a
// conflict with another transaction, up to conflictAttempts in all and
// within ctx. A conflict that outlasts them is refused as a 503
// (domain.CauseContention): the client may send the request again.
func (s *Store) retryingConflicts(ctx context.Context, attempt func() error) error {
	wait := retryFirstWait
	for run := 1; ; run++ {
		err := attempt()
		if err == nil {
			return nil
		}
		cause := ""
		if s.dialect.Conflict != nil {
			cause = s.dialect.Conflict(err)
		}
		if cause == "" && errors.Is(err, errPersonErased) {
			cause = ConflictErased
		}
		if cause == "" {
			return err
		}
		if ctx.Err() != nil {
			// The deadline passed meanwhile: a timeout, not a defect.
			return errors.Join(ctx.Err(), err)
		}
		if run == conflictAttempts {
			s.retries.add(RetryExhausted)
			return &domain.UnavailableError{Cause: domain.CauseContention, Err: err}
		}
		s.retries.add(cause)
		t := time.NewTimer(rand.N(wait) + time.Microsecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(ctx.Err(), err)
		case <-t.C:
		}
		wait = min(2*wait, retryMaxWait)
	}
}
