package main

import (
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/internal/webhook/webhooktest"
	"github.com/pds-dev/pds/pkg/webhookverify"
)

// TestSIGTERMDrains: pds serve is sent SIGTERM while clients send requests
// over kept-alive connections and while webhook attempts are in flight to
// a slow receiver, with more deliveries claimed behind them. /readyz turns
// 503 at once; every request that reached the server gets its whole answer
// (the drain asks clients to close their connections, and only then does
// the listener close); the attempts in flight finish; the process exits 0
// within its grace; and the deliveries it had claimed but not started were
// handed back, so the next start sends them at once rather than after
// their lease.
func TestSIGTERMDrains(t *testing.T) {
	if testing.Short() {
		t.Skip("the fault tests take a while; skipped with -short")
	}
	t.Parallel()
	const (
		drain   = 2 * time.Second
		grace   = 20 * time.Second
		slow    = 3 * time.Second
		persons = 40
	)
	rc := webhooktest.NewReceiver(t)
	var slowing atomic.Bool
	slowing.Store(true)
	rc.Respond(func(int, *http.Request) int {
		if slowing.Load() {
			time.Sleep(slow)
		}
		return http.StatusNoContent
	})
	caFile := filepath.Join(t.TempDir(), "receiver.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rc.Server.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--database", filepath.Join(t.TempDir(), "pds.db"), "--webhook-allow-private", "--webhook-ca-file", caFile,
		"--webhook-window", "100ms", "--webhook-subscription-concurrency", "4",
		"--shutdown-drain", drain.String(), "--shutdown-grace", grace.String(), "--rate-limit", "1000000"}
	first := startServer(t, flags...)
	key := ""
	for deadline := time.Now().Add(10 * time.Second); key == ""; time.Sleep(10 * time.Millisecond) {
		if key = printedKey.FindString(first.out.String()); key == "" && time.Now().After(deadline) {
			t.Fatalf("no key printed on first start: %s", first.out.String())
		}
	}
	status, hook := first.call(t, key, "POST", "/webhooks", map[string]any{
		"name": "slow", "target_url": rc.URL, "events": []string{"person.created"}})
	if status != 201 {
		t.Fatalf("create webhook: %d %v", status, hook)
	}
	var personID string
	for i := range persons {
		status, p := first.call(t, key, "POST", "/persons", map[string]any{"external_id": fmt.Sprintf("p-%d", i)})
		if status != 201 {
			t.Fatalf("upsert: %d %v", status, p)
		}
		personID = p["id"].(string)
	}
	// Four attempts in flight (the subscription's bound), more claimed
	// behind them.
	rc.WaitFor(t, 4, 10*time.Second)

	load := newStopLoad(first.base, key, "/persons/"+personID)
	load.start(4)
	// The clients' connections are open and carried a request each.
	testenv.Eventually(t, 30*time.Second, "four answers to the load", func() bool { return load.answered.Load() >= 4 })

	signalled := time.Now()
	if err := first.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	notReady := waitNotReady(t, first.base)
	exited := make(chan error, 1)
	go func() { exited <- first.cmd.Wait() }()
	var exitErr error
	select {
	case exitErr = <-exited:
	case <-time.After(grace + 5*time.Second):
		t.Fatalf("pds serve still runs %s after SIGTERM", grace+5*time.Second)
	}
	stopped := time.Since(signalled)
	load.stop()
	t.Logf("after SIGTERM: /readyz 503 within %s; exit (%v) after %s; %d answers (%d of them asking to close the connection), %d connections refused once the listener closed",
		notReady.Round(time.Millisecond), exitErr, stopped.Round(time.Millisecond), load.answered.Load(), load.closing.Load(), load.refused.Load())
	// The listener stays open for the drain, so a 503 seen at all was
	// seen within it; how soon after the signal depends on the machine.
	if notReady >= drain {
		t.Errorf("/readyz turned 503 only %s after SIGTERM, after its drain period of %s", notReady, drain)
	}
	if exitErr != nil {
		t.Errorf("pds serve exited with %v after SIGTERM, want status 0", exitErr)
	}
	if stopped < drain {
		t.Errorf("pds serve stopped %s after SIGTERM, before its drain period of %s", stopped, drain)
	}
	cut, late := load.cut(signalled.Add(drain))
	if len(cut) > 0 {
		t.Errorf("%d requests were cut (SIGTERM at %s); the first: %s", len(cut), signalled.Format("15:04:05.000000"), cut[0])
	}
	if late > 0 {
		t.Logf("%d connections opened after the drain were reset as the listener closed", late)
	}
	if load.answered.Load() == 0 || load.closing.Load() == 0 {
		t.Errorf("the drain served %d requests, %d of them with Connection: close", load.answered.Load(), load.closing.Load())
	}

	// The attempts that were in flight finished, and were recorded: the
	// next start does not send them again. What was claimed and not
	// started goes out at once, not after its lease (about a minute).
	inFlight := len(rc.Requests())
	slowing.Store(false)
	restarted := time.Now()
	startServer(t, flags...)
	reqs := rc.WaitFor(t, persons, 15*time.Second)
	t.Logf("the next start sent the other %d deliveries within %s", persons-inFlight, time.Since(restarted).Round(time.Millisecond))
	time.Sleep(time.Second) // a delivery sent twice would arrive by now
	seen := map[string]bool{}
	for _, r := range rc.Requests() {
		id := r.Header.Get(webhookverify.HeaderDeliveryID)
		if seen[id] {
			t.Errorf("delivery %s was sent twice", id)
		}
		seen[id] = true
		if err := webhookverify.Verify(r.Header, r.Body, []string{hook["secret"].(string)}, time.Now(), webhookverify.Options{}); err != nil {
			t.Errorf("delivery %s does not verify: %v", id, err)
		}
	}
	if len(reqs) < persons || len(seen) != persons {
		t.Errorf("%d distinct deliveries of %d persons created", len(seen), persons)
	}
}

// waitNotReady polls /readyz, each time on a new connection, until it says
// 503, and says how long that took. Once the listener closes it can only
// fail, at its generous deadline.
func waitNotReady(t *testing.T, base string) time.Duration {
	t.Helper()
	start := time.Now()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	for time.Since(start) < 30*time.Second {
		res, err := c.Get(base + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusServiceUnavailable {
				return time.Since(start)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("/readyz did not turn 503 within 30 s of SIGTERM")
	return 0
}

// stopLoad sends GETs over kept-alive connections until stopped, keeping
// every failure: a refused connection (the listener closed) is expected
// once the drain is over, anything else means a request was cut.
type stopLoad struct {
	base, key, path string
	c               *http.Client
	quit            chan struct{}
	wg              sync.WaitGroup

	answered, closing, refused atomic.Int64
	mu                         sync.Mutex
	failures                   []loadFailure
}

// loadFailure is a request that got no whole answer.
type loadFailure struct {
	err    string
	reused bool // sent on a connection that had carried a request before
	start  time.Time
}

func newStopLoad(base, key, path string) *stopLoad {
	return &stopLoad{base: base, key: key, path: path, quit: make(chan struct{}),
		c: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}, Timeout: 30 * time.Second}}
}

func (l *stopLoad) start(clients int) {
	for range clients {
		l.wg.Go(func() {
			for {
				select {
				case <-l.quit:
					return
				default:
				}
				l.once()
			}
		})
	}
}

func (l *stopLoad) once() {
	req, _ := http.NewRequest("GET", l.base+l.path, nil)
	req.Header.Set("Authorization", "Bearer "+l.key)
	reused := false
	start := time.Now()
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused },
	}))
	res, err := l.c.Do(req)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			l.refused.Add(1)
			time.Sleep(20 * time.Millisecond)
			return
		}
		l.mu.Lock()
		l.failures = append(l.failures, loadFailure{err: err.Error(), reused: reused, start: start})
		l.mu.Unlock()
		return
	}
	_, err = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	switch {
	case err != nil:
		l.mu.Lock()
		l.failures = append(l.failures, loadFailure{err: "reading the body: " + err.Error(), reused: true, start: start})
		l.mu.Unlock()
	case res.StatusCode != http.StatusOK:
		l.mu.Lock()
		l.failures = append(l.failures, loadFailure{err: fmt.Sprintf("status %d", res.StatusCode), reused: true, start: start})
		l.mu.Unlock()
	default:
		l.answered.Add(1)
		if res.Close {
			l.closing.Add(1)
		}
	}
}

func (l *stopLoad) stop() {
	close(l.quit)
	l.wg.Wait()
}

// cut lists the requests that got no whole answer, but for those sent on
// a new connection once the drain was over (by closed): the kernel may
// complete such a connection in the instant between the server's last
// accept and its closing of the listening socket, and then resets it.
// A client still opening connections after the drain is one no load
// balancer sends; late counts them.
func (l *stopLoad) cut(closed time.Time) (cut []string, late int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range l.failures {
		if !f.reused && f.start.After(closed) {
			late++
			continue
		}
		cut = append(cut, fmt.Sprintf("%s (a %s connection, sent %s)", f.err, map[bool]string{true: "reused", false: "new"}[f.reused],
			f.start.Format("15:04:05.000000")))
	}
	return cut, late
}

// TestSecondSignalStopsAtOnce: a second signal ends a server that is
// draining, without waiting for the drain.
func TestSecondSignalStopsAtOnce(t *testing.T) {
	t.Parallel()
	const drain = time.Minute
	srv := startServer(t, "--database", filepath.Join(t.TempDir(), "pds.db"), "--shutdown-drain", drain.String(), "--shutdown-grace", "90s")
	first := time.Now()
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitNotReady(t, srv.base)
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := srv.cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("after a second signal: %v, want exit status 1", err)
	}
	// A drain that ended by itself exits 0, and not before its minute.
	if took := time.Since(first); took >= drain {
		t.Fatalf("a second signal stopped the server %s after the first, not before the drain's end", took)
	}
}
