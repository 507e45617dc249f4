package sqlstore

import (
	"errors"

	"github.com/pds-dev/pds/internal/domain"
)

// OpError is a failure of one of the store's operations, named: what a 500
// in the log says failed. Its cause stays reachable (errors.Is, errors.As).
type OpError struct {
	// Op is the store method that failed, as "UpsertPerson".
	Op  string
	Err error
}

func (e *OpError) Error() string { return "sqlstore: " + e.Op + ": " + e.Err.Error() }
func (e *OpError) Unwrap() error { return e.Err }

// named gives every exported method's failure its name, deferred at the
// top of the method over its named error result. An answer about the input
// (domain.IsRefusal: a 400, 404 or 409, whose words a client reads) and a
// key refused stay as they are, and an error already named by the method
// it came through keeps the innermost name, the most precise.
func named(op string, err *error) {
	if *err == nil || domain.IsRefusal(*err) || errors.Is(*err, domain.ErrUnauthorized) {
		return
	}
	var done *OpError
	if errors.As(*err, &done) {
		return
	}
	*err = &OpError{Op: op, Err: *err}
}
