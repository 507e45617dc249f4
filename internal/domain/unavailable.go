package domain

import (
	"errors"
	"fmt"
)

// Cause says why the database cannot serve for now.
type Cause string

// The causes a request is refused for while the database cannot serve it.
// Each is a fault of the moment, not of the request: the same request may
// succeed once it passes.
const (
	// CauseUnreachable: no connection could be made or kept (refused,
	// lost, the server shutting down or starting up, no free connection).
	CauseUnreachable Cause = "database_unreachable"
	// CauseTimeout: the database did not answer within the request's
	// deadline (frozen, overloaded, or waiting for a lock someone holds).
	CauseTimeout Cause = "database_timeout"
	// CauseDiskFull: the database has no room to write; reads still work.
	CauseDiskFull Cause = "disk_full"
	// CauseDiskError: reading or writing the database's files failed (an
	// I/O error of the disk or the file system, a file another process
	// cut short).
	CauseDiskError Cause = "disk_error"
	// CauseContention: the request's transaction kept colliding with
	// concurrent writers of the same rows (deadlocks, serialization
	// failures) and was given up after the store's bounded retries.
	CauseContention Cause = "database_contention"
)

// Causes lists every cause, for metrics that start each at zero.
var Causes = []Cause{CauseUnreachable, CauseTimeout, CauseDiskFull, CauseDiskError, CauseContention}

// ErrNoPrimary is what an UnavailableError (CauseUnreachable) wraps when the
// database answers but no server it reaches takes writes: a standby, a
// primary being demoted, an old primary refused, a failover under way.
var ErrNoPrimary = errors.New("no writable primary: the database answers, but no server it reaches takes writes")

// UnavailableError is a refusal for a fault of the database (a 503 with
// Retry-After), never a defect. It wraps the driver's error for the log.
type UnavailableError struct {
	Cause Cause
	Err   error
}

func (e *UnavailableError) Error() string { return fmt.Sprintf("%s: %v", e.Cause, e.Err) }
func (e *UnavailableError) Unwrap() error { return e.Err }
