package httpapi

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/problems"
)

// problem is the problem document both faces share (internal/problems).
type problem = problems.Problem

func newProblem(status int, detail string) *problem { return problems.New(status, detail) }

func writeProblem(w http.ResponseWriter, r *http.Request, p *problem) {
	p.RequestID = requestID(r.Context())
	w.Header().Set("Content-Type", "application/problem+json")
	keepPrivate(w.Header())
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
	p := problems.Unavailable(ue.Cause)
	w.Header().Set("Retry-After", strconv.Itoa(p.RetryAfter))
	writeProblem(w, r, p)
}

// problemFor is the problem document of an error that answers the request
// (bad input, a conflict, a missing resource, ...); nil for a failure.
func problemFor(err error) *problem {
	var se *statusError
	if errors.As(err, &se) {
		return newProblem(se.status, se.detail)
	}
	return problems.For(err)
}
