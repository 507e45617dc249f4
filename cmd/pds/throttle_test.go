package main

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/testenv"
)

// TestBadKeysAreThrottled: against a running pds serve, 1,000 bad API keys
// from one address are answered 401 only for a small budget, then 429
// with Retry-After; a console sign-in from that address is refused with
// the same 429 (one budget for both faces), and /metrics counts both.
func TestBadKeysAreThrottled(t *testing.T) {
	t.Parallel()
	api, met := serveInProcess(t, "--metrics-addr", "127.0.0.1:0")
	bad := "pds_AAAAAAAA_" + strings.Repeat("x", 40)
	statuses := map[int]int{}
	for range 1000 {
		req, _ := http.NewRequest(http.MethodGet, "http://"+api+"/me", nil)
		req.Header.Set("Authorization", "Bearer "+bad)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		statuses[res.StatusCode]++
		if res.StatusCode == http.StatusTooManyRequests && res.Header.Get("Retry-After") == "" {
			t.Fatal("a 429 without Retry-After")
		}
	}
	if statuses[http.StatusUnauthorized] == 0 || statuses[http.StatusUnauthorized] > 30 || statuses[http.StatusTooManyRequests] < 970 {
		t.Fatalf("1,000 bad keys were answered %v; want a small budget of 401s, then 429s", statuses)
	}

	req, _ := http.NewRequest(http.MethodPost, "http://"+api+"/console/sign-in", strings.NewReader(url.Values{"key": {bad}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" {
		t.Fatalf("a console sign-in from the throttled address: %d, Retry-After %q", res.StatusCode, res.Header.Get("Retry-After"))
	}

	res, err = http.Get("http://" + met + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{
		`pds_auth_failures_total{face="api"}`,
		`pds_auth_throttled_total{face="api"}`,
		`pds_auth_throttled_total{face="console"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("no %s in the metrics", want)
		}
	}
}

// serveInProcess runs pds serve with the flags on an address of its own
// and a fresh database until the test ends, and returns the API's address
// and, with --metrics-addr, the metrics'.
func serveInProcess(t *testing.T, flags ...string) (api, met string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut testenv.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0", "--database", t.TempDir() + "/pds.db"}, flags...),
			strings.NewReader(""), &out, &errOut)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for api == "" || (met == "" && slices.Contains(flags, "--metrics-addr")) {
		api = logAddr(strings.NewReader(errOut.String()), "serving")
		met = logAddr(strings.NewReader(errOut.String()), "serving metrics")
		if time.Now().After(deadline) {
			t.Fatalf("server did not come up:\n%s", errOut.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return api, met
}

// TestClientAddressHeader: pds serve -h documents --client-address-header;
// with it, each address its proxy names has a budget of its own, whatever
// the client wrote before it.
func TestClientAddressHeader(t *testing.T) {
	t.Parallel()
	out, err := pds(t, "serve", "-h")
	if err != nil || !strings.Contains(out, "--client-address-header") {
		t.Fatalf("pds serve -h (%v) does not document --client-address-header:\n%s", err, out)
	}
	api, _ := serveInProcess(t, "--client-address-header", "x-forwarded-for")
	bad := "pds_AAAAAAAA_" + strings.Repeat("x", 40)
	from := func(xff string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "http://"+api+"/me", nil)
		req.Header.Set("Authorization", "Bearer "+bad)
		req.Header.Set("X-Forwarded-For", xff)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	// The budget is counted in minutes of the wall clock, so the bad keys
	// may straddle the start of one: the address is refused within two
	// budgets at most, whatever the client wrote before the proxy's entry.
	refusedAfter := 0
	for n := 1; n <= 100 && refusedAfter == 0; n++ {
		before := "10.1.2.3"
		if n%2 == 0 {
			before = "10.9.9.9"
		}
		if from(before+", 198.51.100.7") == http.StatusTooManyRequests {
			refusedAfter = n - 1
		}
	}
	if refusedAfter < 20 || refusedAfter > 40 {
		t.Fatalf("the client the proxy named was refused after %d bad keys, want after its budget of 20 (40 across a minute's start)", refusedAfter)
	}
	if got := from("198.51.100.8"); got != http.StatusUnauthorized {
		t.Fatalf("another client behind the proxy: %d, want 401", got)
	}
}
