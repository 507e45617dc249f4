package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/clock"
	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/metrics"
	"github.com/pds-dev/pds/internal/outage"
	"github.com/pds-dev/pds/internal/ratelimit"
	"github.com/pds-dev/pds/internal/serving"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/testenv"
)

// logLines keeps the JSON log lines a server writes.
type logLines struct {
	mu    sync.Mutex
	lines []map[string]any
}

func (l *logLines) Write(p []byte) (int, error) {
	var line map[string]any
	if err := json.Unmarshal(p, &line); err != nil {
		return 0, err
	}
	l.mu.Lock()
	l.lines = append(l.lines, line)
	l.mu.Unlock()
	return len(p), nil
}

func (l *logLines) with(msg string) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range l.lines {
		if line["msg"] == msg {
			out = append(out, line)
		}
	}
	return out
}

// TestDatabaseTooSlowIsRefusedPlainly: a request whose database work does
// not end within the deadline is answered at the deadline with a 503
// problem naming its cause, with Retry-After, counted by cause and logged
// as a refusal, not an error; the outage is logged once as it begins and
// once as the database serves again.
func TestDatabaseTooSlowIsRefusedPlainly(t *testing.T) {
	t.Parallel()
	st := testenv.SQLite.NewStore(t)
	key := mintKey(t, st, start, nil)
	var logs logLines
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	clk := clock.NewFake(start)
	m := metrics.New()
	shared := serving.Settings{PublicURL: "https://pds.test", DatabaseTimeout: 50 * time.Millisecond, Outages: outage.New(log, clk)}
	s := New(Config{Settings: shared, Metrics: m},
		st, clk, ratelimit.NewMemory(), log)
	// A handler whose database work hangs until the request's deadline,
	// as on a frozen database, and fails as the drivers then fail.
	s.handle("GET /test/hang", domain.ScopeTagsRead, func(w http.ResponseWriter, r *http.Request) error {
		<-r.Context().Done()
		return fmt.Errorf("list tags: %w", r.Context().Err())
	})
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)

	for range 3 {
		// The handler returns only once its request's context is done, and
		// the client does not go away: a 503 for database_timeout is the
		// deadline's, however long the machine took to get there.
		r := call(t, hs.URL, "GET", "/test/hang", key, "", "")
		if r.status != http.StatusServiceUnavailable {
			t.Fatalf("a hanging database: %d, want 503 at the deadline", r.status)
		}
		if r.header.Get("Retry-After") != "5" || r.prob["cause"] != "database_timeout" || r.prob["title"] != "Database Timeout" {
			t.Fatalf("refusal: Retry-After %q, problem %v", r.header.Get("Retry-After"), r.prob)
		}
	}
	clk.Advance(time.Second)
	if r := call(t, hs.URL, "POST", "/tags", key, "application/json", `{"name":"back","context":"person"}`); r.status != 201 {
		t.Fatalf("create a tag once the database answers: %d %s", r.status, r.body)
	}

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{
		`pds_http_unavailable_total{cause="database_timeout"} 3`,
		`pds_http_unavailable_total{cause="disk_full"} 0`,
		`pds_http_requests_total{code="503",route="GET /test/hang"} 3`,
	} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("no %s in the exposition", want)
		}
	}
	for _, line := range logs.with("request") {
		if line["level"] != "INFO" {
			t.Errorf("request logged at %v: %v", line["level"], line)
		}
		if line["status"] == float64(503) && (line["outcome"] != "refused" || line["cause"] != "database_timeout") {
			t.Errorf("refused request logged as %v", line)
		}
	}
	if began, ended := logs.with("database outage began"), logs.with("database outage ended"); len(began) != 1 || len(ended) != 1 ||
		began[0]["cause"] != "database_timeout" || ended[0]["failures"] != float64(3) {
		t.Errorf("outage logged as begun %v and ended %v, want once each", began, ended)
	}
}

// TestDrainTurnsReadinessAndClosesConnections: once the server drains,
// /readyz says 503 and every answer asks its client to close the
// connection, while requests are still served in full.
func TestDrainTurnsReadinessAndClosesConnections(t *testing.T) {
	t.Parallel()
	st := testenv.SQLite.NewStore(t)
	key := mintKey(t, st, start, nil)
	s := New(Config{Settings: serving.Settings{PublicURL: "https://pds.test"}}, st, clock.NewFake(start), ratelimit.NewMemory(), slog.New(slog.DiscardHandler))
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	if r := call(t, hs.URL, "GET", "/readyz", "", "", ""); r.status != 200 {
		t.Fatalf("/readyz before the drain: %d", r.status)
	}
	s.Drain()
	if r := call(t, hs.URL, "GET", "/readyz", "", "", ""); r.status != http.StatusServiceUnavailable {
		t.Fatalf("/readyz while draining: %d", r.status)
	}
	req, _ := http.NewRequest("GET", hs.URL+"/me", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	// The client takes Connection: close out of the header into Close.
	if res.StatusCode != 200 || !res.Close {
		t.Fatalf("GET /me while draining: %d, asked to close the connection: %v", res.StatusCode, res.Close)
	}
}

// noPrimaryStore answers Ping as a database whose servers answer but take
// no writes.
type noPrimaryStore struct{ store.Store }

func (noPrimaryStore) Ping(context.Context) error {
	return &domain.UnavailableError{Cause: domain.CauseUnreachable, Err: domain.ErrNoPrimary}
}

// TestReadyzSaysNoWritablePrimary: /readyz tells a database that does not
// answer from one whose servers answer but take no writes, as during a
// failover.
func TestReadyzSaysNoWritablePrimary(t *testing.T) {
	t.Parallel()
	st := noPrimaryStore{testenv.SQLite.NewStore(t)}
	s := New(Config{Settings: serving.Settings{PublicURL: "https://pds.test", Outages: outage.New(slog.New(slog.DiscardHandler), clock.NewFake(start))}},
		st, clock.NewFake(start), ratelimit.NewMemory(), slog.New(slog.DiscardHandler))
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	r := call(t, hs.URL, "GET", "/readyz", "", "", "")
	if detail, _ := r.prob["detail"].(string); r.status != http.StatusServiceUnavailable || !strings.Contains(detail, "no writable primary") {
		t.Fatalf("/readyz with no writable primary: %d %v", r.status, r.prob)
	}
}
