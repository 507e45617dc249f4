package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/clock"
	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/ratelimit"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/serving"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/testenv"
)

// These tests reach routes that exist only for the test (a counted echo and
// a failing handler), so they live inside the package.

type testServer struct {
	*Server
	url   string
	clock *clock.Fake
}

func newTestServer(t *testing.T, st store.Store, clk *clock.Fake, lim ratelimit.Limiter) *testServer {
	return newLoggingTestServer(t, st, clk, lim, io.Discard)
}

func newLoggingTestServer(t *testing.T, st store.Store, clk *clock.Fake, lim ratelimit.Limiter, logTo io.Writer) *testServer {
	t.Helper()
	s := New(Config{Settings: serving.Settings{PublicURL: "https://pds.test"}}, st, clk, lim, slog.New(slog.NewJSONHandler(logTo, nil)))
	s.handle("POST /test/echo", domain.ScopeTagsWrite, func(w http.ResponseWriter, r *http.Request) error {
		var body struct {
			Name  string   `json:"name"`
			Count int      `json:"count"`
			Tags  []string `json:"tags"`
		}
		if err := decodeJSON(r, &body); err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, body)
	})
	s.handle("GET /test/fail", domain.ScopeTagsRead, func(w http.ResponseWriter, r *http.Request) error {
		return errors.New("pq: relation secret_table does not exist at 10.1.2.3")
	})
	s.handle("GET /test/panic", domain.ScopeTagsRead, func(w http.ResponseWriter, r *http.Request) error {
		panic("boom with internals")
	})
	s.handle("GET /test/page", domain.ScopeTagsRead, func(w http.ResponseWriter, r *http.Request) error {
		p, err := parsePage(r)
		if err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, page([]string(nil), p, 0))
	})
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	ts := &testServer{Server: s, url: hs.URL, clock: clk}
	return ts
}

func mintKeyB(b testing.TB, st store.Store) string { return mintKey(b, st, start, nil) }

func mintKey(t testing.TB, st store.Store, now time.Time, limit *int) string {
	t.Helper()
	acc := domain.NewID("acc")
	if err := st.CreateAccount(context.Background(), domain.Account{ID: acc, Name: "t", CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	_, full, err := service.MintKey(context.Background(), st, service.KeyRequest{AccountID: acc, Scopes: domain.AllScopes, RateLimit: limit}, now)
	if err != nil {
		t.Fatal(err)
	}
	return full
}

type result struct {
	status int
	header http.Header
	body   string
	prob   map[string]any
}

func call(t *testing.T, base, method, path, key, contentType, body string) result {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body == "" {
		req.Body = http.NoBody
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: read the response: %v", method, path, err)
	}
	r := result{status: res.StatusCode, header: res.Header, body: string(raw)}
	if res.Header.Get("Content-Type") == "application/problem+json" {
		if err := json.Unmarshal(raw, &r.prob); err != nil {
			t.Fatalf("%s %s: problem document %q: %v", method, path, raw, err)
		}
		for _, k := range []string{"type", "title", "status", "detail"} {
			if _, ok := r.prob[k]; !ok {
				t.Errorf("problem without %s: %s", k, raw)
			}
		}
	}
	return r
}

var start = time.Date(2026, 11, 21, 10, 0, 10, 0, time.UTC)

func TestRateLimit(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		st := eng.NewStore(t)
		clk := clock.NewFake(start)
		lim := ratelimit.For(st)
		limit := 3
		key := mintKey(t, st, start, &limit)
		s := newTestServer(t, st, clk, lim)
		for i := 1; i <= 3; i++ {
			r := call(t, s.url, "GET", "/test/page", key, "", "")
			if r.status != 200 {
				t.Fatalf("request %d: %d %s", i, r.status, r.body)
			}
			if got, want := r.header.Get("RateLimit-Policy"), `"per-key";q=3;w=60`; got != want {
				t.Errorf("RateLimit-Policy = %q, want %q", got, want)
			}
			if got, want := r.header.Get("RateLimit"), `"per-key";r=`+strconv.Itoa(3-i)+`;t=50`; got != want {
				t.Errorf("RateLimit = %q, want %q", got, want)
			}
			// GET /me is not counted.
			if r := call(t, s.url, "GET", "/me", key, "", ""); r.status != 200 {
				t.Fatalf("/me: %d", r.status)
			}
		}
		r := call(t, s.url, "GET", "/test/page", key, "", "")
		if r.status != 429 || r.header.Get("Retry-After") != "50" || r.prob["status"] != float64(429) {
			t.Fatalf("fourth request: %d Retry-After %q %s", r.status, r.header.Get("Retry-After"), r.body)
		}
		if r.header.Get("RateLimit") == "" {
			t.Error("429 without RateLimit header")
		}
		if r := call(t, s.url, "GET", "/me", key, "", ""); r.status != 200 {
			t.Fatalf("/me while limited: %d", r.status)
		}
		clk.Advance(50 * time.Second)
		if r := call(t, s.url, "GET", "/test/page", key, "", ""); r.status != 200 {
			t.Fatalf("next window: %d", r.status)
		}
		// The server default applies to keys without their own limit.
		other := mintKey(t, st, start, nil)
		if r := call(t, s.url, "GET", "/test/page", other, "", ""); r.header.Get("RateLimit-Policy") != `"per-key";q=600;w=60` {
			t.Errorf("default policy: %q", r.header.Get("RateLimit-Policy"))
		}
	})
}

// TestSharedBudgetAcrossInstances: two servers on one PostgreSQL database
// together grant a key its limit, not twice it.
func TestSharedBudgetAcrossInstances(t *testing.T) {
	t.Parallel()
	db := testenv.Postgres.NewDatabase(t)
	st1, st2 := testenv.Postgres.Open(t, db), testenv.Postgres.Open(t, db)
	clk := clock.NewFake(start)
	limit := 4
	key := mintKey(t, st1, start, &limit)
	a := newTestServer(t, st1, clk, ratelimit.NewShared(st1))
	b := newTestServer(t, st2, clk, ratelimit.NewShared(st2))
	ok := 0
	for i := range 8 {
		srv := a
		if i%2 == 1 {
			srv = b
		}
		switch r := call(t, srv.url, "GET", "/test/page", key, "", ""); r.status {
		case 200:
			ok++
		case 429:
		default:
			t.Fatalf("status %d", r.status)
		}
	}
	if ok != limit {
		t.Fatalf("two instances granted %d requests, want the shared limit %d", ok, limit)
	}
}

func TestBodyErrors(t *testing.T) {
	t.Parallel()
	st := testenv.SQLite.NewStore(t)
	key := mintKey(t, st, start, nil)
	s := newTestServer(t, st, clock.NewFake(start), ratelimit.NewMemory())
	cases := []struct {
		name, contentType, body string
		status                  int
		pointer                 string
	}{
		{"ok", "application/json", `{"name":"a","count":2}`, 200, ""},
		{"charset is fine", "application/json; charset=utf-8", `{"name":"a"}`, 200, ""},
		{"no content type", "", `{"name":"a"}`, 415, ""},
		{"form", "application/x-www-form-urlencoded", `name=a`, 415, ""},
		{"malformed", "application/json", `{"name":`, 400, ""},
		{"not an object", "application/json", `["a"]`, 400, ""},
		{"empty", "application/json", ``, 400, ""},
		{"no body and no content type", "", ``, 400, ""},
		{"blank body", "text/plain", "  \n", 400, ""},
		{"trailing data", "application/json", `{"name":"a"} {}`, 400, ""},
		{"unknown member", "application/json", `{"name":"a","colour":"red"}`, 400, "/colour"},
		{"wrong type", "application/json", `{"count":"two"}`, 400, "/count"},
		{"wrong element type", "application/json", `{"tags":[1]}`, 400, "/tags/0"},
		{"raw invalid UTF-8", "application/json", "{\"name\":\"\xff\xfe\"}", 400, "/name"},
		{"escaped lone surrogate", "application/json", `{"name":"\ud800"}`, 400, "/name"},
		{"escaped surrogate pair is fine", "application/json", `{"name":"\ud83d\ude00"}`, 200, ""},
		{"member twice", "application/json", `{"name":"A","name":"B"}`, 400, "/name"},
		{"member name in another case", "application/json", `{"Name":"A"}`, 400, "/Name"},
		{"charset latin1", "application/json; charset=latin1", `{"name":"a"}`, 415, ""},
		{"charset UTF-8 in capitals", "application/json; charset=UTF-8", `{"name":"a"}`, 200, ""},
		{"too large", "application/json", `{"name":"` + strings.Repeat("a", 1<<20) + `"}`, 413, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := call(t, s.url, "POST", "/test/echo", key, c.contentType, c.body)
			if r.status != c.status {
				t.Fatalf("status %d, want %d: %s", r.status, c.status, r.body)
			}
			if c.status == 200 {
				return
			}
			if r.header.Get("Content-Type") != "application/problem+json" {
				t.Fatalf("content type %q", r.header.Get("Content-Type"))
			}
			if c.pointer != "" {
				errs, _ := r.prob["errors"].([]any)
				if len(errs) != 1 || errs[0].(map[string]any)["pointer"] != c.pointer {
					t.Fatalf("errors = %v, want pointer %s", r.prob["errors"], c.pointer)
				}
			}
		})
	}
}

func TestServerErrorsHideInternals(t *testing.T) {
	t.Parallel()
	st := testenv.SQLite.NewStore(t)
	key := mintKey(t, st, start, nil)
	s := newTestServer(t, st, clock.NewFake(start), ratelimit.NewMemory())
	for _, path := range []string{"/test/fail", "/test/panic"} {
		r := call(t, s.url, "GET", path, key, "", "")
		if r.status != 500 || strings.Contains(r.body, "secret") || strings.Contains(r.body, "boom") {
			t.Fatalf("%s: %d %s", path, r.status, r.body)
		}
		if r.prob["request_id"] != r.header.Get("X-Request-Id") {
			t.Errorf("500 does not quote its request id: %s", r.body)
		}
	}
}

func TestPageBounds(t *testing.T) {
	t.Parallel()
	st := testenv.SQLite.NewStore(t)
	key := mintKey(t, st, start, nil)
	s := newTestServer(t, st, clock.NewFake(start), ratelimit.NewMemory())
	for q, want := range map[string]int{
		"": 200, "?page=1&size=1": 200, "?size=100": 200, "?page=99999": 200,
		"?page=0": 400, "?page=-1": 400, "?page=x": 400, "?size=0": 400, "?size=101": 400, "?size=1.5": 400, "?page=": 400,
	} {
		r := call(t, s.url, "GET", "/test/page"+q, key, "", "")
		if r.status != want {
			t.Errorf("%q: %d, want %d (%s)", q, r.status, want, r.body)
			continue
		}
		if want == 400 {
			errs, _ := r.prob["errors"].([]any)
			if len(errs) != 1 || errs[0].(map[string]any)["parameter"] == nil {
				t.Errorf("%q: errors %v do not name the parameter", q, r.prob["errors"])
			}
		}
	}
	var p domain.Page[string]
	r := call(t, s.url, "GET", "/test/page", key, "", "")
	if err := json.Unmarshal([]byte(r.body), &p); err != nil {
		t.Fatalf("defaults: %s: %v", r.body, err)
	}
	if p.Page != 1 || p.Size != 25 || p.Items == nil {
		t.Fatalf("defaults: %s", r.body)
	}
}

// TestRequestLog: one structured line per request with the request id,
// method, route, status and duration, naming the key by id, never by secret.
func TestRequestLog(t *testing.T) {
	t.Parallel()
	st := testenv.SQLite.NewStore(t)
	key := mintKey(t, st, start, nil)
	var logs testenv.Buffer
	s := newLoggingTestServer(t, st, clock.NewFake(start), ratelimit.NewMemory(), &logs)
	r := call(t, s.url, "GET", "/test/page?size=2", key, "", "")
	var line map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(logs.String())), &line); err != nil {
		t.Fatalf("log is not one JSON line: %q", logs.String())
	}
	if line["request_id"] != r.header.Get("X-Request-Id") || line["method"] != "GET" ||
		line["route"] != "GET /test/page" || line["status"] != float64(200) || line["duration_ms"] == nil ||
		!strings.HasPrefix(line["key_id"].(string), "key_") {
		t.Fatalf("log line %v", line)
	}
	if strings.Contains(logs.String(), key) || strings.Contains(logs.String(), key[13:]) {
		t.Fatal("the request log contains the key")
	}
}

// recordingHandler keeps every record that reaches it.
type recordingHandler struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler            { return h }
func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}

// TestServerErrorsLogThroughServerLogger: the error behind a 500 reaches the
// server's own JSON logger with the request id the response quoted, and
// nothing goes to slog's global default, which an operator's pipeline does
// not read. It swaps the global default, so it must not run in parallel.
func TestServerErrorsLogThroughServerLogger(t *testing.T) {
	global := &recordingHandler{}
	prev := slog.Default()
	slog.SetDefault(slog.New(global))
	t.Cleanup(func() { slog.SetDefault(prev) })

	st := testenv.SQLite.NewStore(t)
	key := mintKey(t, st, start, nil)
	var logs testenv.Buffer
	s := newLoggingTestServer(t, st, clock.NewFake(start), ratelimit.NewMemory(), &logs)
	for path, want := range map[string]struct{ msg, detail string }{
		"/test/fail":  {"request failed", "secret_table"},
		"/test/panic": {"panic", "boom with internals"},
	} {
		r := call(t, s.url, "GET", path, key, "", "")
		id := r.header.Get("X-Request-Id")
		if r.status != 500 || id == "" || r.prob["request_id"] != id {
			t.Fatalf("%s: %d, X-Request-Id %q, %s", path, r.status, id, r.body)
		}
		found := false
		for _, raw := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			var line map[string]any
			if err := json.Unmarshal([]byte(raw), &line); err != nil {
				t.Fatalf("log line is not JSON: %q: %v", raw, err)
			}
			if line["msg"] == want.msg && line["request_id"] == id {
				found = true
				if line["level"] != "ERROR" || !strings.Contains(raw, want.detail) {
					t.Errorf("%s: error line %s, want level ERROR naming %q", path, raw, want.detail)
				}
			}
		}
		if !found {
			t.Errorf("%s: no %q line with request id %s in the server's log:\n%s", path, want.msg, id, logs.String())
		}
	}
	global.mu.Lock()
	defer global.mu.Unlock()
	for _, rec := range global.records {
		t.Errorf("written to the global default logger: %s %s", rec.Level, rec.Message)
	}
}

func TestAcceptsGzip(t *testing.T) {
	for header, want := range map[string]bool{
		"":                        false,
		"gzip":                    true,
		"gzip, deflate, br, zstd": true,
		"br;q=1.0, GZIP;q=0.5":    true,
		"x-gzip":                  true,
		"*":                       true,
		"identity":                false,
		"br, deflate":             false,
		"gzip;q=0":                false,
		"gzip; q=0.000, br":       false,
		"gzip;q=nonsense":         false,
		"gzipped":                 false,
	} {
		if got := acceptsGzip([]string{header}); got != want {
			t.Errorf("Accept-Encoding %q: acceptsGzip %v, want %v", header, got, want)
		}
	}
	if !acceptsGzip([]string{"br", "gzip"}) {
		t.Error("gzip in a second Accept-Encoding line is not seen")
	}
}

// TestQueryParamsCheck: an operation takes the query parameters its contract
// declares, by exact name; a route outside the contract (the tests' own)
// takes any.
func TestQueryParamsCheck(t *testing.T) {
	t.Parallel()
	cases := []struct {
		pattern, name string
		want          string // a part of the problem's detail; "" for none
	}{
		{"GET /persons", "tag_ids", ""},
		{"GET /persons", "page", ""},
		{"GET /persons", "tag_id", "it takes updated_since, external_id, email, tag_ids, page, size."},
		{"GET /persons", "Tag_Ids", "not a parameter"},
		{"GET /persons/export", "page", "it takes updated_since, tag_ids, after."},
		{"GET /persons/{person_id}", "extended", ""},
		{"PATCH /persons/{person_id}", "extended", "which takes no query parameters."},
		{"GET /healthz", "verbose", "which takes no query parameters."},
		{"GET /test/page", "anything", ""},
	}
	for _, c := range cases {
		err := takesQuery(c.pattern).check(c.name)
		var ve *domain.ValidationError
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s takes %s: %v", c.pattern, c.name, err)
		case c.want != "" && (!errors.As(err, &ve) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s given %s: %v, want a 400 saying %q", c.pattern, c.name, err, c.want)
		}
	}
}
