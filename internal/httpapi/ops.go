package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/pds-dev/pds/api"
)

type statusView struct {
	Status string `json:"status"`
}

// healthz says the process is up.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	return writeJSON(w, http.StatusOK, statusView{Status: "ok"})
}

// readyz says the database answers.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.store.Ping(ctx); err != nil {
		s.log.WarnContext(ctx, "readiness check failed", "error", err.Error())
		writeProblem(w, r, newProblem(http.StatusServiceUnavailable, "The database is not reachable."))
		return nil
	}
	return writeJSON(w, http.StatusOK, statusView{Status: "ready"})
}

// openapiJSON serves the contract.
func (s *Server) openapiJSON(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, err := w.Write(api.JSON())
	return err
}

// docs serves a reference page rendered from the contract in the browser.
func (s *Server) docs(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, err := w.Write(api.DocsHTML())
	return err
}
