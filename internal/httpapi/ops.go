package httpapi

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/pds-dev/pds/api"
	"github.com/pds-dev/pds/internal/domain"
)

type statusView struct {
	Status string `json:"status"`
}

// healthz says the process is up.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	return writeJSON(w, http.StatusOK, statusView{Status: "ok"})
}

// readyz says whether this instance should get traffic: not while it
// stops (Drain), nor while the database does not answer or takes no
// writes (no writable primary: it says which). A failed check is
// not logged on its own: a load balancer asks every few seconds, and the
// outage log says when the database stopped answering and when it came
// back.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	if s.draining.Load() {
		writeProblem(w, r, newProblem(http.StatusServiceUnavailable, "This instance is shutting down; send requests to another."))
		return nil
	}
	ctx, cancel := context.WithTimeout(r.Context(), min(2*time.Second, s.cfg.DatabaseTimeout))
	defer cancel()
	if err := s.store.Ping(ctx); err != nil {
		var ue *domain.UnavailableError
		if errors.As(s.store.Classify(err), &ue) {
			s.cfg.Outages.Failed(ue)
		} else {
			s.log.WarnContext(ctx, "readiness check failed", "error", err.Error())
		}
		detail := "The database is not reachable."
		if errors.Is(s.store.Classify(err), domain.ErrNoPrimary) {
			detail = "The database answers, but no server it reaches takes writes (no writable primary): a failover may be under way."
		}
		writeProblem(w, r, newProblem(http.StatusServiceUnavailable, detail))
		return nil
	}
	s.cfg.Outages.Served(false)
	return writeJSON(w, http.StatusOK, statusView{Status: "ready"})
}

// openapiJSON serves the contract.
func (s *Server) openapiJSON(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, err := w.Write(api.JSON())
	return err
}

// docsCSP confines the reference page to this server: the script it runs,
// the contract it fetches, the styles the script injects (inline, hence
// 'unsafe-inline' for styles alone) and data: images. Nothing from
// elsewhere loads or runs, and nothing is sent elsewhere.
const docsCSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// docs serves the reference page, which renders the contract in the browser
// with the script docsScript serves.
func (s *Server) docs(w http.ResponseWriter, r *http.Request) error {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", docsCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "public, max-age=300")
	_, err := w.Write(api.DocsHTML())
	return err
}

// docsScript serves the reference page's script, kept compressed in the
// binary: as is to a client that takes gzip (every browser), decompressed
// to one that does not. Asked for under its current version, as the page
// asks, it may be cached for a year; a new binary's page names a new URL.
func (s *Server) docsScript(w http.ResponseWriter, r *http.Request) error {
	h := w.Header()
	h.Set("Content-Type", "text/javascript; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Vary", "Accept-Encoding")
	if query(r).Get("v") == api.DocsScriptVersion() {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "public, max-age=300")
	}
	gz := api.DocsScriptGzip()
	if acceptsGzip(r.Header.Values("Accept-Encoding")) {
		h.Set("Content-Encoding", "gzip")
		h.Set("Content-Length", strconv.Itoa(len(gz)))
		_, err := w.Write(gz)
		return err
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return err
	}
	_, err = io.Copy(w, zr)
	return err
}

// acceptsGzip says whether Accept-Encoding lets the answer be gzip: gzip
// (or x-gzip, or *) listed without q=0.
func acceptsGzip(values []string) bool {
	for _, v := range values {
		for _, item := range strings.Split(v, ",") {
			coding, params, _ := strings.Cut(item, ";")
			switch strings.ToLower(strings.TrimSpace(coding)) {
			case "gzip", "x-gzip", "*":
			default:
				continue
			}
			refused := false
			for _, p := range strings.Split(params, ";") {
				name, value, _ := strings.Cut(p, "=")
				if strings.EqualFold(strings.TrimSpace(name), "q") {
					q, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
					refused = err != nil || q <= 0
				}
			}
			if !refused {
				return true
			}
		}
	}
	return false
}
