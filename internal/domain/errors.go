// Package domain holds the entities, scopes and errors shared by every layer.
package domain

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. The HTTP layer maps each to one status code.
var (
	ErrNotFound     = errors.New("not found")
	ErrUnauthorized = errors.New("unauthorized")
)

// UnauthorizedError is a 401: the key is missing, unknown, revoked or
// expired; Detail says which. It matches ErrUnauthorized with errors.Is.
type UnauthorizedError struct{ Detail string }

func (e *UnauthorizedError) Error() string        { return e.Detail }
func (e *UnauthorizedError) Is(target error) bool { return target == ErrUnauthorized }

// ScopeError is a 403: the key is valid but lacks the scope an operation
// requires (spec section 5.5).
type ScopeError struct{ Scope Scope }

func (e *ScopeError) Error() string {
	return "This key lacks the scope " + string(e.Scope) + " that this operation requires."
}

// FieldError names one bad input: a body field (Pointer, a JSON pointer such
// as "/email") or a query parameter (Parameter).
type FieldError struct {
	Pointer   string `json:"pointer,omitempty"`
	Parameter string `json:"parameter,omitempty"`
	Detail    string `json:"detail"`
	// SuppressionID names the suppression that refused the member, on a
	// 409 suppressed: the id to look up or lift, which the client could
	// not find otherwise (a suppression shows only a hash).
	SuppressionID string `json:"suppression_id,omitempty"`
}

// ValidationError is invalid input: a 400 that changes nothing.
type ValidationError struct {
	Detail string
	Errors []FieldError
}

func (e *ValidationError) Error() string { return e.Detail }

// Invalid is the ValidationError of one or more invalid members. Each
// member's sentence is said once: with one member it is the detail too;
// with several the detail names them and errors says why for each.
func Invalid(errs ...FieldError) *ValidationError {
	if len(errs) == 1 {
		return &ValidationError{Detail: errs[0].Detail, Errors: errs}
	}
	names := make([]string, len(errs))
	for i, e := range errs {
		names[i] = e.Pointer
		if e.Parameter != "" {
			names[i] = e.Parameter
		}
	}
	return &ValidationError{Detail: fmt.Sprintf("%d members are invalid: %s; errors says why each one is.", len(errs), strings.Join(names, ", ")),
		Errors: errs}
}

// BodyError builds a ValidationError for one body field.
func BodyError(pointer, format string, args ...any) *ValidationError {
	d := fmt.Sprintf(format, args...)
	return &ValidationError{Detail: d, Errors: []FieldError{{Pointer: pointer, Detail: d}}}
}

// ParamError builds a ValidationError for one query parameter.
func ParamError(param, format string, args ...any) *ValidationError {
	d := fmt.Sprintf(format, args...)
	return &ValidationError{Detail: d, Errors: []FieldError{{Parameter: param, Detail: d}}}
}

// ConflictError is a 409: the write collides with an existing resource.
type ConflictError struct {
	Detail     string
	ExistingID string
}

func (e *ConflictError) Error() string { return e.Detail }

// ForbiddenError is a 403 that is not about scopes, e.g. a read-only custom field.
type ForbiddenError struct{ Detail string }

func (e *ForbiddenError) Error() string { return e.Detail }

// LimitError is a 422: an account-wide limit is reached.
type LimitError struct {
	Detail  string
	Limit   int
	Current int
}

func (e *LimitError) Error() string { return e.Detail }

// NotFoundError is a 404 with a detail naming what was not found; it matches
// ErrNotFound with errors.Is.
type NotFoundError struct{ Detail string }

func (e *NotFoundError) Error() string        { return e.Detail }
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// NotFound returns a NotFoundError for a resource kind and id.
func NotFound(kind, id string) error {
	return &NotFoundError{Detail: fmt.Sprintf("No %s with id %q exists in this account.", kind, id)}
}

// IsRefusal reports whether err is an answer about the input (400, 403, 404,
// 409, 422) rather than a failure: what a batch answers for one item while
// the other items go on.
func IsRefusal(err error) bool {
	var (
		ve *ValidationError
		ce *ConflictError
		fe *ForbiddenError
		le *LimitError
		se *SuppressedError
	)
	return errors.As(err, &ve) || errors.As(err, &ce) || errors.As(err, &fe) || errors.As(err, &le) || errors.As(err, &se) ||
		errors.Is(err, ErrNotFound)
}
