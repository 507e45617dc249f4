// Package webhooktest gives webhook tests real HTTPS receivers, settings
// that trust them, and a stand-in renderer.
package webhooktest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/webhook"
)

// Request is one delivery attempt a receiver got.
type Request struct {
	Path   string
	Header http.Header
	Body   []byte
}

// Receiver is an HTTPS endpoint (httptest.NewTLSServer) that records every
// request and answers with the status Respond picks (204 by default).
type Receiver struct {
	Server *httptest.Server
	URL    string

	mu       sync.Mutex
	requests []Request
	respond  func(n int, r *http.Request) int
}

// FollowedPath is where a receiver's redirects point.
const FollowedPath = "/followed"

// NewReceiver starts a receiver that the test closes at its end.
func NewReceiver(t testing.TB) *Receiver {
	rc := &Receiver{}
	rc.Server = httptest.NewTLSServer(http.HandlerFunc(rc.serve))
	rc.URL = rc.Server.URL + "/hooks/pds"
	t.Cleanup(rc.Server.Close)
	return rc
}

func (rc *Receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.requests = append(rc.requests, Request{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	n, respond := len(rc.requests), rc.respond
	rc.mu.Unlock()
	status := http.StatusNoContent
	if respond != nil {
		status = respond(n, r)
	}
	if status >= 300 && status < 400 {
		// Back to this receiver, so that a followed redirect would show.
		w.Header().Set("Location", FollowedPath)
	}
	w.WriteHeader(status)
}

// Respond sets how the receiver answers its n-th request (1-based); a
// function may block on r.Context() to make the attempt time out.
func (rc *Receiver) Respond(f func(n int, r *http.Request) int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.respond = f
}

// Always answers every request with status.
func (rc *Receiver) Always(status int) {
	rc.Respond(func(int, *http.Request) int { return status })
}

// Requests returns what the receiver got so far.
func (rc *Receiver) Requests() []Request {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]Request(nil), rc.requests...)
}

// Settings trust the receivers' certificates and allow their loopback
// addresses; jitter is off so that schedules are exact.
func Settings(receivers ...*Receiver) webhook.Settings {
	s := webhook.Settings{
		AllowPrivate: true,
		Jitter:       func(d time.Duration) time.Duration { return d },
	}
	for _, rc := range receivers {
		s.ExtraCAs = append(s.ExtraCAs, rc.Server.Certificate())
	}
	return s
}

// Renderer stands in for the person view: data is {"id": <person id>,
// "rendered_at": <now>, "version": <n>} where n counts renders of that person.
type Renderer struct {
	mu      sync.Mutex
	renders map[string]int
	err     error
}

// Fail makes every later render fail with err (nil: succeed again).
func (r *Renderer) Fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err = err
}

// Renders counts the renders of a person.
func (r *Renderer) Renders(personID string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.renders[personID]
}

// Render renders the stand-in view.
func (r *Renderer) Render(_ context.Context, _ string, personID string, now time.Time) (json.RawMessage, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return nil, r.err
	}
	if r.renders == nil {
		r.renders = map[string]int{}
	}
	r.renders[personID]++
	return json.Marshal(map[string]any{"id": personID, "rendered_at": now.UTC().Format(time.RFC3339Nano), "version": r.renders[personID]})
}
