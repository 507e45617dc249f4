package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/testenv"
)

// TestServePprofAddr: --pprof-addr serves net/http/pprof on a listener of
// its own, and the API's listener serves none of it.
func TestServePprofAddr(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut testenv.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--pprof-addr", "127.0.0.1:0",
			"--database", t.TempDir() + "/pds.db"}, strings.NewReader(""), &out, &errOut)
	}()
	deadline := time.Now().Add(30 * time.Second)
	var api, prof string
	for api == "" || prof == "" {
		api = logAddr(strings.NewReader(errOut.String()), "serving")
		prof = logAddr(strings.NewReader(errOut.String()), "serving pprof")
		if time.Now().After(deadline) {
			t.Fatalf("server did not come up:\n%s", errOut.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	get := func(url string) (int, string) {
		t.Helper()
		res, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := get("http://" + prof + "/debug/pprof/cmdline"); code != 200 || body == "" {
		t.Fatalf("GET /debug/pprof/cmdline: %d %q", code, body)
	}
	if code, body := get("http://" + prof + "/debug/pprof/heap?debug=1"); code != 200 || !strings.Contains(body, "heap profile") {
		t.Fatalf("GET /debug/pprof/heap: %d %.200q", code, body)
	}
	if code, _ := get("http://" + api + "/debug/pprof/cmdline"); code != 404 {
		t.Fatalf("GET /debug/pprof/cmdline on the API's address: %d, want 404", code)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
