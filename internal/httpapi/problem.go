package httpapi

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

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
	if p := problemFor(err); p != nil {
		writeProblem(w, r, p)
		return
	}
	s.log.LogAttrs(r.Context(), slog.LevelError, "request failed",
		slog.String("request_id", requestID(r.Context())), slog.String("error", err.Error()))
	writeProblem(w, r, newProblem(http.StatusInternalServerError,
		"The server could not complete the request. Quote the request id when reporting it."))
}

// problemFor is the problem document of an error that answers the request
// (bad input, a conflict, a missing resource, ...); nil for a failure.
func problemFor(err error) *problem {
	var (
		ve *domain.ValidationError
		ce *domain.ConflictError
		fe *domain.ForbiddenError
		le *domain.LimitError
		nf *domain.NotFoundError
		se *statusError
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
	case errors.As(err, &le):
		p := newProblem(http.StatusUnprocessableEntity, le.Detail)
		p.Limit, p.Current = &le.Limit, &le.Current
		return p
	}
	return nil
}
