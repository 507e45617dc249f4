package httpapi

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/pds-dev/pds/internal/domain"
)

// problem is an RFC 9457 problem document with this API's extension members.
type problem struct {
	Type         string              `json:"type"`
	Title        string              `json:"title"`
	Status       int                 `json:"status"`
	Detail       string              `json:"detail"`
	Errors       []domain.FieldError `json:"errors,omitempty"`
	MissingScope domain.Scope        `json:"missing_scope,omitempty"`
	ExistingID   string              `json:"existing_id,omitempty"`
	Limit        *int                `json:"limit,omitempty"`
	Current      *int                `json:"current,omitempty"`
	Cause        domain.Cause        `json:"cause,omitempty"`
	RequestID    string              `json:"request_id,omitempty"`
}

func newProblem(status int, detail string) *problem {
	return &problem{Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: detail}
}

func writeProblem(w http.ResponseWriter, r *http.Request, p *problem) {
	p.RequestID = requestID(r.Context())
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

// writeError maps an error from any layer to its problem document. Unknown
// errors are logged with the request id through the server's logger (never
// slog's global default, which an operator's pipeline does not read) and
// shown as a bare 500.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if clientGone(r, err) {
		// Nobody reads the answer; the request log says what happened.
		w.WriteHeader(statusClientClosed)
		return
	}
	err = s.store.Classify(err)
	var ue *domain.UnavailableError
	if errors.As(err, &ue) {
		s.refuse(w, r, ue)
		return
	}
	if p := problemFor(err); p != nil {
		writeProblem(w, r, p)
		return
	}
	s.log.LogAttrs(r.Context(), slog.LevelError, "request failed",
		slog.String("request_id", requestID(r.Context())), slog.String("error", err.Error()))
	writeProblem(w, r, newProblem(http.StatusInternalServerError,
		"The server could not complete the request. Quote the request id when reporting it."))
}

// refuse answers a request the database could not serve for now: a 503
// whose title and cause member say why and whose Retry-After says when to
// try again. It is not a defect, so it is not logged as one: the outage
// log says when the database stopped serving and when it came back.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, ue *domain.UnavailableError) {
	s.cfg.Outages.Failed(ue)
	if s.cfg.Metrics != nil {
		s.cfg.Metrics.Unavailable(ue.Cause)
	}
	if who, _ := r.Context().Value(callerKey{}).(*caller); who != nil {
		who.refused = ue.Cause
	}
	p := unavailableProblem(ue.Cause)
	w.Header().Set("Retry-After", strconv.Itoa(p.retryAfter))
	writeProblem(w, r, p.problem)
}

type refusal struct {
	problem    *problem
	retryAfter int // seconds
}

// unavailableProblem is the 503 of a cause: what a client or an operator
// reads to tell an outage from a defect, and when to try again. A full
// disk is not freed in seconds, so its clients are asked to wait longer.
func unavailableProblem(cause domain.Cause) refusal {
	var title, detail string
	retry := 5
	switch cause {
	case domain.CauseTimeout:
		title = "Database Timeout"
		detail = "The database did not answer in time. Nothing was changed unless a later read shows it; retry the request shortly."
	case domain.CauseDiskFull:
		title = "Database Disk Full"
		detail = "The database has no room left to write; reads still work. Nothing was changed; retry the write later."
		retry = 30
	default:
		title = "Database Unreachable"
		detail = "The database cannot be reached. Nothing was changed unless a later read shows it; retry the request shortly."
	}
	p := newProblem(http.StatusServiceUnavailable, detail)
	p.Title, p.Cause = title, cause
	return refusal{problem: p, retryAfter: retry}
}

// problemFor is the problem document of an error that answers the request
// (bad input, a conflict, a missing resource, ...); nil for a failure.
func problemFor(err error) *problem {
	var (
		ve       *domain.ValidationError
		ce       *domain.ConflictError
		fe       *domain.ForbiddenError
		le       *domain.LimitError
		nf       *domain.NotFoundError
		se       *statusError
		scopeErr *domain.ScopeError
	)
	switch {
	case errors.As(err, &se):
		return newProblem(se.status, se.detail)
	case errors.As(err, &ve):
		p := newProblem(http.StatusBadRequest, ve.Detail)
		p.Errors = ve.Errors
		return p
	case errors.As(err, &nf):
		return newProblem(http.StatusNotFound, nf.Detail)
	case errors.Is(err, domain.ErrNotFound):
		return newProblem(http.StatusNotFound, "The resource does not exist in this account.")
	case errors.As(err, &ce):
		p := newProblem(http.StatusConflict, ce.Detail)
		p.ExistingID = ce.ExistingID
		return p
	case errors.As(err, &fe):
		return newProblem(http.StatusForbidden, fe.Detail)
	case errors.As(err, &scopeErr):
		p := newProblem(http.StatusForbidden, scopeErr.Error())
		p.MissingScope = scopeErr.Scope
		return p
	case errors.As(err, &le):
		p := newProblem(http.StatusUnprocessableEntity, le.Detail)
		p.Limit, p.Current = &le.Limit, &le.Current
		return p
	}
	return nil
}
