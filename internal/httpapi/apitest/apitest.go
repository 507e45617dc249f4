// Package apitest runs the API over a real HTTP server on a real database for
// tests, and checks every response against the OpenAPI contract.
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/clock"
	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/httpapi"
	"github.com/pds-dev/pds/internal/instance"
	"github.com/pds-dev/pds/internal/ratelimit"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/serving"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/testenv"
)

// Start is the fake clock's starting time in every test.
var Start = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// Env is one running API server.
type Env struct {
	T      testing.TB
	Store  store.Store
	Clock  *clock.Fake
	Server *httpapi.Server
	HTTP   *httptest.Server
	Config httpapi.Config
}

// Option adjusts the server before it starts.
type Option func(*options)

type options struct {
	cfg     httpapi.Config
	clock   *clock.Fake
	limiter ratelimit.Limiter
	log     io.Writer
}

// WithLog has the server write its log to w (JSON lines, as pds serve
// writes them), for a test that reads what it logged.
func WithLog(w io.Writer) Option { return func(o *options) { o.log = w } }

// WithConfig replaces the server configuration.
func WithConfig(cfg httpapi.Config) Option { return func(o *options) { o.cfg = cfg } }

// WithClock shares a clock between servers.
func WithClock(c *clock.Fake) Option { return func(o *options) { o.clock = c } }

// DefaultConfig is the configuration tests run with unless told otherwise.
func DefaultConfig() httpapi.Config {
	return httpapi.Config{Settings: serving.Settings{PublicURL: "https://pds.test", RateLimit: 600, CustomFieldLimit: 100}}
}

// New starts a server on a fresh database of engine e.
func New(t testing.TB, e testenv.Engine, opts ...Option) *Env {
	return NewOn(t, e.NewStore(t), opts...)
}

// NewOn starts a server on an open store; two servers on stores opened on
// one database behave as two instances.
func NewOn(t testing.TB, st store.Store, opts ...Option) *Env {
	o := options{cfg: DefaultConfig()}
	for _, opt := range opts {
		opt(&o)
	}
	if o.clock == nil {
		o.clock = clock.NewFake(Start)
	}
	if o.limiter == nil {
		o.limiter = ratelimit.For(st)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if o.log != nil {
		log = slog.New(slog.NewJSONHandler(o.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	// The console is mounted as pds serve mounts it (internal/instance).
	srv := instance.New(instance.Parts{Settings: o.cfg.Settings, Store: st, Clock: o.clock, Limiter: o.limiter, Log: log, Metrics: o.cfg.Metrics})
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return &Env{T: t, Store: st, Clock: o.clock, Server: srv, HTTP: hs, Config: o.cfg}
}

// NewAccount creates an account and returns its id.
func (e *Env) NewAccount() string {
	e.T.Helper()
	id := domain.NewID("acc")
	if err := e.Store.CreateAccount(context.Background(), domain.Account{ID: id, Name: "test", CreatedAt: e.Clock.Now()}); err != nil {
		e.T.Fatalf("create account: %v", err)
	}
	return id
}

// Key mints a key for the account with the given scopes (every scope when
// none are given) and returns the secret.
func (e *Env) Key(account string, scopes ...domain.Scope) string {
	e.T.Helper()
	k, _ := e.KeyWith(service.KeyRequest{AccountID: account, Scopes: scopes})
	return k
}

// KeyWith mints a key from a full request and returns the secret and the key.
func (e *Env) KeyWith(req service.KeyRequest) (string, domain.APIKey) {
	e.T.Helper()
	if len(req.Scopes) == 0 {
		req.Scopes = domain.AllScopes
	}
	k, full, err := service.MintKey(context.Background(), e.Store, req, e.Clock.Now())
	if err != nil {
		e.T.Fatalf("mint key: %v", err)
	}
	return full, k
}

// Response is a finished request.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
	t      testing.TB
}

// JSON decodes the body into v.
func (r *Response) JSON(v any) {
	r.t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		r.t.Fatalf("decode %s: %v", r.Body, err)
	}
}

// Map decodes the body as a JSON object.
func (r *Response) Map() map[string]any {
	r.t.Helper()
	var m map[string]any
	r.JSON(&m)
	return m
}

// Problem decodes a problem document.
func (r *Response) Problem() Problem {
	r.t.Helper()
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		r.t.Fatalf("status %d with content type %q, want application/problem+json; body %s", r.Status, ct, r.Body)
	}
	var p Problem
	r.JSON(&p)
	return p
}

// Problem is a decoded problem document.
type Problem struct {
	Type         string `json:"type"`
	Title        string `json:"title"`
	Status       int    `json:"status"`
	Detail       string `json:"detail"`
	MissingScope string `json:"missing_scope"`
	ExistingID   string `json:"existing_id"`
	MergedInto   string `json:"merged_into"`
	Limit        *int   `json:"limit"`
	Current      *int   `json:"current"`
	Errors       []struct {
		Pointer       string `json:"pointer"`
		Parameter     string `json:"parameter"`
		Detail        string `json:"detail"`
		SuppressionID string `json:"suppression_id"`
	} `json:"errors"`
}

// Want fails the test unless the status is one of want.
func (r *Response) Want(want ...int) *Response {
	r.t.Helper()
	for _, w := range want {
		if r.Status == w {
			return r
		}
	}
	r.t.Fatalf("status %d, want %v; body %s", r.Status, want, r.Body)
	return r
}

// Request describes one call.
type Request struct {
	Method string
	Path   string
	Key    string
	// Body is marshalled as JSON unless it is a []byte or string, sent as is.
	Body        any
	ContentType string // default application/json when there is a body
	Header      http.Header
}

// Do sends the request and validates the response against the contract.
func (e *Env) Do(req Request) *Response {
	e.T.Helper()
	var body io.Reader
	if req.Body != nil {
		switch b := req.Body.(type) {
		case []byte:
			body = bytes.NewReader(b)
		case string:
			body = bytes.NewReader([]byte(b))
		default:
			raw, err := json.Marshal(b)
			if err != nil {
				e.T.Fatal(err)
			}
			body = bytes.NewReader(raw)
		}
	}
	hr, err := http.NewRequest(req.Method, e.HTTP.URL+req.Path, body)
	if err != nil {
		e.T.Fatal(err)
	}
	for k, v := range req.Header {
		hr.Header[k] = v
	}
	if req.Body != nil {
		ct := req.ContentType
		if ct == "" {
			ct = "application/json"
		}
		hr.Header.Set("Content-Type", ct)
	}
	if req.Key != "" {
		hr.Header.Set("Authorization", "Bearer "+req.Key)
	}
	res, err := e.HTTP.Client().Do(hr)
	if err != nil {
		e.T.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		e.T.Fatal(err)
	}
	if res.Header.Get("X-Request-Id") == "" {
		e.T.Errorf("%s %s: no X-Request-Id header", req.Method, req.Path)
	}
	if err := checkResponse(req.Method, req.Path, res.StatusCode, res.Header, raw); err != nil {
		e.T.Errorf("%v", err)
	}
	return &Response{Status: res.StatusCode, Header: res.Header, Body: raw, t: e.T}
}

// Get is Do for a GET.
func (e *Env) Get(key, path string) *Response {
	e.T.Helper()
	return e.Do(Request{Method: http.MethodGet, Path: path, Key: key})
}

// Post is Do for a POST with a JSON body.
func (e *Env) Post(key, path string, body any) *Response {
	e.T.Helper()
	return e.Do(Request{Method: http.MethodPost, Path: path, Key: key, Body: body})
}

// Patch is Do for a PATCH with a JSON body.
func (e *Env) Patch(key, path string, body any) *Response {
	e.T.Helper()
	return e.Do(Request{Method: http.MethodPatch, Path: path, Key: key, Body: body})
}

// Delete is Do for a DELETE.
func (e *Env) Delete(key, path string) *Response {
	e.T.Helper()
	return e.Do(Request{Method: http.MethodDelete, Path: path, Key: key})
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
