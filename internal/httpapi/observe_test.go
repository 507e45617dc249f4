package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/clock"
	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/metrics"
	"github.com/pds-dev/pds/internal/ratelimit"
	"github.com/pds-dev/pds/internal/serving"
	"github.com/pds-dev/pds/internal/testenv"
)

// lineWriter hands every log line to a channel.
type lineWriter chan string

func (w lineWriter) Write(p []byte) (int, error) {
	w <- string(p)
	return len(p), nil
}

// TestAClientThatGoesAwayIsNotAServerError: a request whose client hangs
// up while the handler waits on the database (which then fails, as SQLite
// and pgx do on a cancelled context) is logged, in the JSON request log,
// as a client that went away (status 499, level INFO), with no 500 and no
// ERROR line.
func TestAClientThatGoesAwayIsNotAServerError(t *testing.T) {
	t.Parallel()
	st := testenv.SQLite.NewStore(t)
	key := mintKey(t, st, start, nil)
	lines := make(lineWriter, 16)
	s := New(Config{Settings: serving.Settings{PublicURL: "https://pds.test"}}, st, clock.NewFake(start), ratelimit.NewMemory(), slog.New(slog.NewJSONHandler(lines, nil)))
	entered := make(chan struct{})
	s.handle("GET /test/wait", domain.ScopeTagsRead, func(w http.ResponseWriter, r *http.Request) error {
		close(entered)
		<-r.Context().Done()
		return fmt.Errorf("list tags: %w", errors.New("interrupted (9)"))
	})
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", hs.URL+"/test/wait", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	go func() {
		<-entered
		cancel()
	}()
	if res, err := http.DefaultClient.Do(req); err == nil {
		res.Body.Close()
		t.Fatal("the request was answered")
	}
	select {
	case raw := <-lines:
		var line map[string]any
		if err := json.Unmarshal([]byte(raw), &line); err != nil {
			t.Fatalf("log line is not JSON: %q", raw)
		}
		if line["msg"] != "request" || line["level"] != "INFO" || line["status"] != float64(499) ||
			line["outcome"] != "client went away" || line["route"] != "GET /test/wait" || !strings.Contains(raw, "interrupted") {
			t.Fatalf("log line %s", raw)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no request log line")
	}
	select {
	case raw := <-lines:
		t.Fatalf("a second log line: %s", raw)
	default:
	}
}

// TestRequestMetricsByRoutePattern: requests are counted by the route
// pattern (never the path, which holds ids) and status, with their
// latency, and refusals of a spent budget are counted; the exposition
// names no account and no key.
func TestRequestMetricsByRoutePattern(t *testing.T) {
	t.Parallel()
	st := testenv.SQLite.NewStore(t)
	one := 1
	key := mintKey(t, st, start, &one)
	m := metrics.New()
	s := New(Config{Settings: serving.Settings{PublicURL: "https://pds.test"}, Metrics: m}, st, clock.NewFake(start), ratelimit.NewMemory(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	for _, want := range []int{404, 429} {
		if r := call(t, hs.URL, "GET", "/tags/tag_nope", key, "", ""); r.status != want {
			t.Fatalf("GET /tags/tag_nope: %d, want %d", r.status, want)
		}
	}
	call(t, hs.URL, "GET", "/nowhere", key, "", "")
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	out := rec.Body.String()
	for _, want := range []string{
		`pds_http_requests_total{code="404",route="GET /tags/{tag_id}"} 1`,
		`pds_http_requests_total{code="429",route="GET /tags/{tag_id}"} 1`,
		`pds_http_requests_total{code="404",route="unmatched"} 1`,
		`pds_http_request_duration_seconds_count{route="GET /tags/{tag_id}"} 2`,
		`pds_rate_limit_refusals_total 1`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %s in the exposition", want)
		}
	}
	if strings.Contains(out, "tag_nope") || strings.Contains(out, "acc_") || strings.Contains(out, "key_") {
		t.Error("the exposition names an id")
	}
}
