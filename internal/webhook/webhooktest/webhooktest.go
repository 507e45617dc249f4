// Package webhooktest gives webhook tests real HTTPS receivers, settings
// that trust them, and a stand-in renderer.
package webhooktest

import (
	"context"
	"encoding/json"
	"io"
	"net"
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
	// inFlight and maxInFlight count requests being answered.
	inFlight, maxInFlight int
	// got is closed and replaced at every request.
	got chan struct{}
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

// NewPlainReceiver starts a plain-HTTP receiver on 127.0.0.1 (a receiver
// under local development), closed at the test's end.
func NewPlainReceiver(t testing.TB) *Receiver {
	rc := &Receiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(rc.serve))
	rc.URL = rc.Server.URL + "/hooks/pds"
	t.Cleanup(rc.Server.Close)
	return rc
}

func (rc *Receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.requests = append(rc.requests, Request{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	n, respond := len(rc.requests), rc.respond
	rc.inFlight++
	rc.maxInFlight = max(rc.maxInFlight, rc.inFlight)
	if rc.got != nil {
		close(rc.got)
		rc.got = nil
	}
	rc.mu.Unlock()
	defer func() {
		rc.mu.Lock()
		rc.inFlight--
		rc.mu.Unlock()
	}()
	status := http.StatusNoContent
	if respond != nil {
		status = respond(n, r)
	}
	if r.Context().Err() != nil {
		// The attempt gave up while the receiver held it (a function that
		// blocks on r.Context() to make it time out): answer nothing, as a
		// receiver that never answers. A status written now could still
		// reach a client that is only just cancelling, and a loaded
		// machine then sees a timed-out attempt succeed.
		panic(http.ErrAbortHandler)
	}
	if status >= 300 && status < 400 {
		// Back to this receiver, so that a followed redirect would show.
		w.Header().Set("Location", FollowedPath)
	}
	w.WriteHeader(status)
}

// Respond sets how the receiver answers its n-th request (1-based); a
// function may block on r.Context() to make the attempt time out, and
// then nothing is answered whatever it returns.
func (rc *Receiver) Respond(f func(n int, r *http.Request) int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.respond = f
}

// Always answers every request with status.
func (rc *Receiver) Always(status int) {
	rc.Respond(func(int, *http.Request) int { return status })
}

// FirstThen answers the first request with first and every later one with
// rest: a receiver that fails once, as the retry tests need.
func (rc *Receiver) FirstThen(first, rest int) {
	rc.Respond(func(n int, _ *http.Request) int {
		if n == 1 {
			return first
		}
		return rest
	})
}

// Requests returns what the receiver got so far.
func (rc *Receiver) Requests() []Request {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]Request(nil), rc.requests...)
}

// MaxInFlight is the most requests the receiver was answering at once.
func (rc *Receiver) MaxInFlight() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.maxInFlight
}

// WaitFor waits until the receiver has got n requests, or fails the test
// after timeout (real time: the worker's HTTP runs in real time).
func (rc *Receiver) WaitFor(t testing.TB, n int, timeout time.Duration) []Request {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		rc.mu.Lock()
		if len(rc.requests) >= n {
			got := append([]Request(nil), rc.requests...)
			rc.mu.Unlock()
			return got
		}
		if rc.got == nil {
			rc.got = make(chan struct{})
		}
		ch, have := rc.got, len(rc.requests)
		rc.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("the receiver got %d requests within %s, want %d", have, timeout, n)
		}
	}
}

// BlackHole is a TCP listener that accepts connections and never answers
// on them: a TLS handshake with it never ends.
type BlackHole struct {
	URL string

	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	got   chan struct{}
}

// NewBlackHole starts a black hole that the test closes at its end.
func NewBlackHole(t testing.TB) *BlackHole {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &BlackHole{ln: ln, URL: "https://" + ln.Addr().String() + "/hooks/pds"}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b.mu.Lock()
			b.conns = append(b.conns, c)
			if b.got != nil {
				close(b.got)
				b.got = nil
			}
			b.mu.Unlock()
		}
	}()
	t.Cleanup(b.Close)
	return b
}

// Conns counts the connections accepted so far.
func (b *BlackHole) Conns() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.conns)
}

// WaitFor waits until n connections were accepted.
func (b *BlackHole) WaitFor(t testing.TB, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		b.mu.Lock()
		if len(b.conns) >= n {
			b.mu.Unlock()
			return
		}
		if b.got == nil {
			b.got = make(chan struct{})
		}
		ch, have := b.got, len(b.conns)
		b.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("the black hole accepted %d connections within %s, want %d", have, timeout, n)
		}
	}
}

// Close stops listening and drops every connection, so that attempts
// waiting on it fail at once.
func (b *BlackHole) Close() {
	b.ln.Close()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.conns {
		c.Close()
	}
}

// Settings trust the receivers' certificates and allow their loopback
// addresses; jitter is off so that schedules are exact.
func Settings(receivers ...*Receiver) webhook.Settings {
	s := webhook.Settings{
		AllowPrivate: true,
		Jitter:       func(d time.Duration) time.Duration { return d },
	}
	for _, rc := range receivers {
		if cert := rc.Server.Certificate(); cert != nil { // nil: plain HTTP
			s.ExtraCAs = append(s.ExtraCAs, cert)
		}
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
