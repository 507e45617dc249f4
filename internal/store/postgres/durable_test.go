package postgres

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestSyncRepCancelled: the notices a commit draws when its wait for the
// synchronous standbys ends early are told apart by severity and code,
// which no lc_messages translates; other notices are not.
func TestSyncRepCancelled(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		notice pgconn.Notice
		want   bool
	}{
		{"the wait cancelled (the deadline's cancel request)", pgconn.Notice{SeverityUnlocalized: "WARNING", Code: "01000",
			Message: "canceling wait for synchronous replication due to user request"}, true},
		{"the same, in another language", pgconn.Notice{Severity: "WARNUNG", SeverityUnlocalized: "WARNING", Code: "01000",
			Message: "breche Warten auf synchrone Replikation ab"}, true},
		{"the backend terminated while it waited", pgconn.Notice{SeverityUnlocalized: "WARNING", Code: "57P01"}, true},
		{"no transaction in progress", pgconn.Notice{SeverityUnlocalized: "WARNING", Code: "25P01"}, false},
		{"a NOTICE", pgconn.Notice{SeverityUnlocalized: "NOTICE", Code: "00000"}, false},
	} {
		if got := syncRepCancelled(&c.notice); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestCommitOutcome: a statement that committed is acknowledged only when it
// returned no error, drew no notice of a cancelled wait for the standbys,
// and ended before its deadline.
func TestCommitOutcome(t *testing.T) {
	t.Parallel()
	failed := errors.New("connection lost")
	for _, c := range []struct {
		name      string
		err       error
		cancelled bool
		deadline  error
		want      error
	}{
		{"confirmed", nil, false, nil, nil},
		{"its own error", failed, false, nil, failed},
		{"its own error, with the notice", failed, true, nil, failed},
		{"the wait for the standbys cancelled", nil, true, nil, errCommitUnconfirmed},
		{"the deadline passed while it ran", nil, false, errors.New("context deadline exceeded"), errCommitUnconfirmed},
	} {
		if got := commitOutcome(c.err, c.cancelled, c.deadline); !errors.Is(got, c.want) || (c.want == nil) != (got == nil) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
