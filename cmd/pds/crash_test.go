package main

import (
	"bufio"
	"encoding/json"
	"encoding/pem"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/internal/webhook/webhooktest"
	"github.com/pds-dev/pds/pkg/webhookverify"
)

// runMainEnv makes the test binary act as the pds binary, so that a test can
// run the real server in a process of its own and kill it.
const runMainEnv = "PDS_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// server is a pds serve process.
type server struct {
	cmd  *exec.Cmd
	base string
	out  *testenv.Buffer
}

func startServer(t *testing.T, args ...string) *server {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	out := &testenv.Buffer{}
	cmd.Stdout = out
	logs, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := make(chan string, 1)
	go func() { addr <- servingAddr(logs); _, _ = io.Copy(io.Discard, logs) }()
	select {
	case a := <-addr:
		if a == "" {
			t.Fatalf("pds serve stopped before serving; it printed %s", out.String())
		}
		return &server{cmd: cmd, base: "http://" + a, out: out}
	case <-time.After(30 * time.Second):
		t.Fatalf("pds serve did not come up; it printed %s", out.String())
	}
	return nil
}

// servingAddr reads the server's log until its "serving" line and returns
// the address it listens on, so that the test talks to this server and no
// other ("" when the log ends first).
func servingAddr(logs io.Reader) string {
	sc := bufio.NewScanner(logs)
	for sc.Scan() {
		var line struct{ Msg, Addr string }
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "serving" {
			return line.Addr
		}
	}
	return ""
}

// kill ends the process the way a crash or an OOM kill would: no shutdown.
func (s *server) kill(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = s.cmd.Wait()
}

func (s *server) call(t *testing.T, key, method, path string, body any) (int, map[string]any) {
	t.Helper()
	return callAPI(t, s.base, key, method, path, body)
}

var printedKey = regexp.MustCompile(`pds_[A-Za-z0-9]+_[A-Za-z0-9]+`)

// TestCrashLosesNothing: a person write acknowledged with 201 inside an
// open coalescing window survives a SIGKILL of the server, and the restarted
// server delivers the burst: nothing acknowledged is lost, nothing is sent twice.
func TestCrashLosesNothing(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		db := eng.NewDatabase(t)
		rc := webhooktest.NewReceiver(t)
		caFile := filepath.Join(t.TempDir(), "receiver.pem")
		pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rc.Server.Certificate().Raw})
		if err := os.WriteFile(caFile, pemBytes, 0o600); err != nil {
			t.Fatal(err)
		}
		flags := []string{"--database", db, "--webhook-allow-private", "--webhook-ca-file", caFile, "--webhook-window", "1500ms"}

		first := startServer(t, flags...)
		// Standard output is copied from the process by its own goroutine,
		// which may lag behind the log line that said the server is up.
		key := ""
		for deadline := time.Now().Add(10 * time.Second); key == ""; time.Sleep(10 * time.Millisecond) {
			if key = printedKey.FindString(first.out.String()); key == "" && time.Now().After(deadline) {
				t.Fatalf("no key printed on first start: %s", first.out.String())
			}
		}
		status, hook := first.call(t, key, "POST", "/webhooks", map[string]any{
			"name": "crm", "target_url": rc.URL, "events": []string{"person.created", "person.updated"}})
		if status != 201 {
			t.Fatalf("create webhook: %d %v", status, hook)
		}
		status, person := first.call(t, key, "POST", "/persons", map[string]any{"email": "grace@x.test", "first_name": "Grace"})
		if status != 201 {
			t.Fatalf("upsert: %d %v", status, person)
		}
		first.kill(t)
		if n := len(rc.Requests()); n != 0 {
			t.Fatalf("%d deliveries before the window closed", n)
		}

		second := startServer(t, flags...)
		if status, got := second.call(t, key, "GET", "/persons/"+person["id"].(string), nil); status != 200 || got["first_name"] != "Grace" {
			t.Fatalf("after the crash the acknowledged person reads %d %v", status, got)
		}
		deadline := time.Now().Add(20 * time.Second)
		for len(rc.Requests()) == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the burst committed before the crash was not delivered after the restart")
			}
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(2 * time.Second) // a second delivery of the same burst would arrive by now
		reqs := rc.Requests()
		if len(reqs) != 1 {
			t.Fatalf("%d deliveries of one burst, want 1", len(reqs))
		}
		if reqs[0].Header.Get("Service-Event") != "person.created" {
			t.Fatalf("event %q, want person.created", reqs[0].Header.Get("Service-Event"))
		}
		if err := webhookverify.Verify(reqs[0].Header, reqs[0].Body, []string{hook["secret"].(string)}, time.Now(), webhookverify.Options{}); err != nil {
			t.Fatalf("delivery does not verify: %v", err)
		}
	})
}
