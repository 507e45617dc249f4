package sqlstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

// errConflict stands for a driver's deadlock error in the table below.
var errConflict = errors.New("deadlock detected")

func TestRetryingConflicts(t *testing.T) {
	s := &Store{dialect: Dialect{Conflict: func(err error) string {
		if errors.Is(err, errConflict) {
			return ConflictDeadlock
		}
		return ""
	}}}
	errOther := errors.New("unique violation")
	for _, tc := range []struct {
		name      string
		errs      []error // what each run returns; past the end, nil
		cancel    bool
		wantRuns  int
		wantCause domain.Cause // the refusal's cause, "" for none
		wantErr   error        // errors.Is the returned error
		retried   uint64
		exhausted uint64
	}{
		{name: "a transaction that commits runs once", wantRuns: 1},
		{name: "a deadlock runs it again until it commits", errs: []error{errConflict, errConflict}, wantRuns: 3, retried: 2},
		{name: "another error is the caller's at once", errs: []error{errOther}, wantRuns: 1, wantErr: errOther},
		{name: "a conflict that outlasts the bound is a contention refusal",
			errs: repeat(errConflict, conflictAttempts+5), wantRuns: conflictAttempts, wantCause: domain.CauseContention,
			wantErr: errConflict, retried: conflictAttempts - 1, exhausted: 1},
		{name: "a conflict after the deadline is a timeout, not run again", errs: []error{errConflict}, cancel: true,
			wantRuns: 1, wantErr: context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.retries = retryCounts{}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			runs := 0
			err := s.retryingConflicts(ctx, func() error {
				runs++
				if tc.cancel {
					cancel()
				}
				if runs <= len(tc.errs) {
					return tc.errs[runs-1]
				}
				return nil
			})
			if runs != tc.wantRuns {
				t.Errorf("ran %d times, want %d", runs, tc.wantRuns)
			}
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("error %v, want %v", err, tc.wantErr)
			}
			var ue *domain.UnavailableError
			if got := errors.As(err, &ue); got != (tc.wantCause != "") || got && ue.Cause != tc.wantCause {
				t.Errorf("error %v, want a refusal for %q", err, tc.wantCause)
			}
			if r := s.Retries(); r[ConflictDeadlock] != tc.retried || r[RetryExhausted] != tc.exhausted {
				t.Errorf("counts %v, want %d retried and %d exhausted", r, tc.retried, tc.exhausted)
			}
		})
	}
}

func repeat(err error, n int) []error {
	out := make([]error, n)
	for i := range out {
		out[i] = err
	}
	return out
}

// TestRetryWaitsStayWithinADeadline: the bounded runs wait less, in all,
// than a request's deadline leaves them.
func TestRetryWaitsStayWithinADeadline(t *testing.T) {
	total, wait := time.Duration(0), retryFirstWait
	for range conflictAttempts - 1 {
		total += wait
		wait = min(2*wait, retryMaxWait)
	}
	if total > 250*time.Millisecond {
		t.Fatalf("the waits of %d runs add up to %v at most", conflictAttempts, total)
	}
}
