package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/testenv"
)

// logAddr finds the addr of the first log line with this message.
func logAddr(logs io.Reader, msg string) string {
	sc := bufio.NewScanner(logs)
	for sc.Scan() {
		var line struct{ Msg, Addr string }
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == msg {
			return line.Addr
		}
	}
	return ""
}

// TestServeMetricsAddr: --metrics-addr serves the Prometheus exposition on
// a listener of its own (the API's has no /metrics), counting the API's
// requests by route and reading the pools and the webhook backlog.
func TestServeMetricsAddr(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut testenv.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0",
			"--database", t.TempDir() + "/pds.db"}, strings.NewReader(""), &out, &errOut)
	}()
	deadline := time.Now().Add(30 * time.Second)
	var api, met string
	for api == "" || met == "" {
		api = logAddr(strings.NewReader(errOut.String()), "serving")
		met = logAddr(strings.NewReader(errOut.String()), "serving metrics")
		if time.Now().After(deadline) {
			t.Fatalf("server did not come up:\n%s", errOut.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	key := ""
	for _, f := range strings.Fields(out.String()) {
		if strings.HasPrefix(f, "pds_") {
			key = f
			break
		}
	}
	get := func(url, key string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", url, nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, _ := get("http://"+api+"/me", key); code != 200 {
		t.Fatalf("GET /me: %d", code)
	}
	if code, _ := get("http://"+api+"/metrics", ""); code != 404 {
		t.Fatalf("GET /metrics on the API's address: %d, want 404", code)
	}
	code, body := get("http://"+met+"/metrics", "")
	if code != 200 {
		t.Fatalf("GET /metrics: %d", code)
	}
	for _, want := range []string{
		`pds_http_requests_total{code="200",route="GET /me"} 1`,
		`pds_webhook_deliveries_pending 0`,
		`pds_webhook_open_bursts 0`,
		`pds_webhook_oldest_due_seconds 0`,
		`pds_db_pool_open_connections{pool="write"}`,
		`pds_webhook_attempts_total{outcome="succeeded"} 0`,
		`pds_db_retries_total{cause="deadlock"} 0`,
		`pds_db_retries_total{cause="exhausted"} 0`,
		`pds_http_unavailable_total{cause="database_contention"} 0`,
		`go_goroutines`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("no %s in:\n%s", want, body)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
