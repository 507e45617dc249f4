// Package problems turns errors into RFC 9457 problem documents: one
// answer per error, whichever face shows it (the API writes it as JSON,
// the console renders it next to the form or on an error page).
package problems

import (
	"errors"
	"net/http"

	"github.com/pds-dev/pds/internal/domain"
)

// Problem is a problem document with this service's extension members.
type Problem struct {
	Type         string              `json:"type"`
	Title        string              `json:"title"`
	Status       int                 `json:"status"`
	Detail       string              `json:"detail"`
	Errors       []domain.FieldError `json:"errors,omitempty"`
	MissingScope domain.Scope        `json:"missing_scope,omitempty"`
	ExistingID   string              `json:"existing_id,omitempty"`
	// MergedInto is the survivor a merged person's id resolves to, on a
	// 404 urn:pds:problem:merged.
	MergedInto string       `json:"merged_into,omitempty"`
	Limit      *int         `json:"limit,omitempty"`
	Current    *int         `json:"current,omitempty"`
	Cause      domain.Cause `json:"cause,omitempty"`
	RequestID  string       `json:"request_id,omitempty"`
	// RetryAfter is the Retry-After header's seconds (0: none).
	RetryAfter int `json:"-"`
}

// New is a problem of status, titled with its status phrase.
func New(status int, detail string) *Problem {
	return &Problem{Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: detail}
}

// For is the problem of an error that answers a request: bad input (400),
// a missing scope or a forbidden change (403), an absent resource (404), a
// conflict (409), a limit (422), a database that cannot serve for now
// (503; classify the error with the store's Classify first). It is nil for
// anything else: a failure, a 500.
func For(err error) *Problem {
	var (
		ve *domain.ValidationError
		ce *domain.ConflictError
		fe *domain.ForbiddenError
		le *domain.LimitError
		nf *domain.NotFoundError
		se *domain.ScopeError
		ue *domain.UnavailableError
		su *domain.SuppressedError
		me *domain.MergedError
		// expired: a cursor of the change feed issued too long ago.
		expired *domain.CursorExpiredError
	)
	switch {
	case errors.As(err, &ve):
		p := New(http.StatusBadRequest, ve.Detail)
		p.Errors = ve.Errors
		return p
	case errors.As(err, &me):
		p := New(http.StatusNotFound, me.Error())
		p.Type, p.Title, p.MergedInto = domain.MergedProblemType, "Person Merged", me.MergedInto
		return p
	case errors.As(err, &nf):
		return New(http.StatusNotFound, nf.Detail)
	case errors.Is(err, domain.ErrNotFound):
		return New(http.StatusNotFound, "The resource does not exist in this account.")
	case errors.As(err, &ce):
		p := New(http.StatusConflict, ce.Detail)
		p.ExistingID = ce.ExistingID
		return p
	case errors.As(err, &su):
		p := New(http.StatusConflict, su.Error())
		p.Type, p.Title = domain.SuppressedProblemType, "Identifier Suppressed"
		if su.Pointer != "" {
			p.Errors = []domain.FieldError{{Pointer: su.Pointer, Detail: su.Error(), SuppressionID: su.SuppressionID}}
		}
		return p
	case errors.As(err, &expired):
		p := New(http.StatusGone, expired.Error())
		p.Type, p.Title = domain.CursorExpiredProblemType, "Cursor Expired"
		return p
	case errors.As(err, &fe):
		return New(http.StatusForbidden, fe.Detail)
	case errors.As(err, &se):
		p := New(http.StatusForbidden, se.Error())
		p.MissingScope = se.Scope
		return p
	case errors.As(err, &le):
		p := New(http.StatusUnprocessableEntity, le.Detail)
		p.Limit, p.Current = &le.Limit, &le.Current
		return p
	case errors.As(err, &ue):
		return Unavailable(ue.Cause)
	}
	return nil
}

// Unavailable is the 503 of a cause: what a client or an operator reads to
// tell an outage from a defect, and when to try again. A full disk is not
// freed in seconds, so its clients are asked to wait longer.
func Unavailable(cause domain.Cause) *Problem {
	var title, detail string
	retry := 5
	switch cause {
	case domain.CauseTimeout:
		title = "Database Timeout"
		detail = "The database did not answer in time. Nothing was changed unless a later read shows it; retry the request shortly."
	case domain.CauseContention:
		title = "Database Contention"
		detail = "Concurrent writes to the same records kept colliding, and this one was not made. Nothing was changed; retry the request."
		retry = 1
	case domain.CauseDiskFull:
		title = "Database Disk Full"
		detail = "The database has no room left to write; reads still work. Nothing was changed; retry the write later."
		retry = 30
	case domain.CauseDiskError:
		title = "Database Disk Error"
		detail = "The database's files could not be read or written. Nothing was changed unless a later read shows it; retry the request shortly."
	default:
		title = "Database Unreachable"
		detail = "The database cannot be reached. Nothing was changed unless a later read shows it; retry the request shortly."
	}
	p := New(http.StatusServiceUnavailable, detail)
	p.Title, p.Cause, p.RetryAfter = title, cause, retry
	return p
}
