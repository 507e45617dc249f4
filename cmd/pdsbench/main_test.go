package main

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	var lat []time.Duration
	for i := 1; i <= 200; i++ {
		lat = append(lat, time.Duration(i)*time.Millisecond)
	}
	if p := percentile(lat, 50); p != 100*time.Millisecond {
		t.Fatalf("p50 %v", p)
	}
	if p := percentile(lat, 99); p != 198*time.Millisecond {
		t.Fatalf("p99 %v", p)
	}
	if p := percentile(lat[:1], 99); p != time.Millisecond {
		t.Fatalf("p99 of one %v", p)
	}
	if p := percentile(nil, 99); p != 0 {
		t.Fatalf("p99 of none %v", p)
	}
}

func TestPagesOf(t *testing.T) {
	for _, c := range []struct {
		total   int
		pages   []int
		skipped int
	}{
		{1_000_000, []int{1, 400, 4000, 40000}, 0},
		{20_000, []int{1, 400, 800}, 1},
		{10_000, []int{1, 400}, 1}, // page 400 is the last
		{10, []int{1}, 2},
	} {
		pages, skipped := pagesOf(c.total, 400, 4000)
		if !slices.Equal(pages, c.pages) || len(skipped) != c.skipped {
			t.Errorf("%d: pages %v, skipped %v", c.total, pages, skipped)
		}
	}
}

func TestParseRows(t *testing.T) {
	if got, err := parseRows("bulk, scale,bulk"); err != nil || !slices.Equal(got, []string{"bulk", "scale"}) {
		t.Fatalf("bulk, scale,bulk: %v %v", got, err)
	}
	if _, err := parseRows("scale,nope"); err == nil {
		t.Fatal("an unknown group was accepted")
	}
}

func TestBatchBody(t *testing.T) {
	if err := allCreated([]byte(`{"results":[{"status":201},{"status":201}]}`), 2); err != nil {
		t.Fatal(err)
	}
	if err := allCreated([]byte(`{"results":[{"status":201},{"status":409}]}`), 2); err == nil {
		t.Fatal("a 409 item passed as created")
	}
	var body struct {
		Persons []map[string]string `json:"persons"`
	}
	if err := json.Unmarshal(batchBody(3, 2), &body); err != nil || len(body.Persons) != 2 || body.Persons[1]["external_id"] != "batch-301" {
		t.Fatalf("batch body %+v, %v", body, err)
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{0.3}, 0.3},
		{[]float64{0.2, 0.3, 0.9}, 0.3},
		{[]float64{0.2, 0.3, 0.4, 0.9}, 0.35},
	} {
		if got := median(tc.in); got < tc.want-1e-9 || got > tc.want+1e-9 {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestResultsAdd(t *testing.T) {
	a := result{latencies: []time.Duration{1, 5}, elapsed: time.Second, errors: 1}
	b := result{latencies: []time.Duration{3}, elapsed: 2 * time.Second, errors: 2}
	got := a.add(b)
	if !slices.Equal(got.latencies, []time.Duration{1, 3, 5}) || got.elapsed != 3*time.Second || got.errors != 3 || got.perSecond() != 1 {
		t.Errorf("add: %+v", got)
	}
	if !slices.Equal(a.latencies, []time.Duration{1, 5}) {
		t.Errorf("add changed its receiver: %v", a.latencies)
	}
}

// TestCPUOf: the CPU time read from /proc/PID/stat is what the kernel
// reports to the process itself, to a clock tick or two.
func TestCPUOf(t *testing.T) {
	var ru syscall.Rusage
	for start := time.Now(); time.Since(start) < 10*time.Second; {
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		if ru.Utime.Nano()+ru.Stime.Nano() > int64(100*time.Millisecond) {
			break
		}
	}
	got := cpuOf(os.Getpid())
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	want := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	if got <= 0 || got > want || want-got > 100*time.Millisecond {
		t.Fatalf("cpuOf %v, getrusage %v", got, want)
	}
}

// TestCPUProfileEndsOnHalfClose: a profile asked for a day ends, and is
// written whole, when the client half-closes its connection.
func TestCPUProfileEndsOnHalfClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	p, err := startCPUProfile(ln.Addr().String(), path)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	if err := p.finish(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("finish took %v", took)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// A profile is gzipped protobuf.
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Fatalf("not a profile: %q", b[:min(len(b), 64)])
	}
}

func TestWithoutSettings(t *testing.T) {
	got := withoutSettings([]string{"PATH=/bin", "PDS_RATE_LIMIT=5", "HOME=/root", "PDS_DATABASE=x.db"})
	if !slices.Equal(got, []string{"PATH=/bin", "HOME=/root"}) {
		t.Fatalf("%v", got)
	}
}
