package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/internal/webhook"
	"github.com/pds-dev/pds/pkg/webhookverify"
)

// runningListen is a pds webhooks listen running in a goroutine.
type runningListen struct {
	out    *testenv.Buffer
	cancel context.CancelFunc
	done   chan error
	id     string // its subscription
	url    string // its receiver
}

var listeningLine = regexp.MustCompile(`Listening for .* on subscription (wh_\w+) \(account acc_\w+, signed by [a-z-]+\) at (http://127\.0\.0\.1:\d+/);`)

// startListen runs pds webhooks listen and waits for its first line.
func startListen(t *testing.T, args ...string) *runningListen {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	l := &runningListen{out: &testenv.Buffer{}, cancel: cancel, done: make(chan error, 1)}
	var errOut testenv.Buffer
	go func() {
		l.done <- run(ctx, append([]string{"webhooks", "listen"}, args...), strings.NewReader(""), l.out, &errOut)
	}()
	t.Cleanup(func() { l.stop(t) })
	waitOutput(t, l.out, func(out string) bool {
		if strings.Contains(out, `"listening":true`) {
			var start struct {
				WebhookID string `json:"webhook_id"`
				TargetURL string `json:"target_url"`
			}
			if json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &start) == nil {
				l.id, l.url = start.WebhookID, start.TargetURL
			}
			return true
		}
		if m := listeningLine.FindStringSubmatch(out); m != nil {
			l.id, l.url = m[1], m[2]
			return true
		}
		select {
		case err := <-l.done:
			l.done <- err
			t.Fatalf("pds webhooks listen %v stopped: %v\n%s%s", args, err, l.out.String(), errOut.String())
		default:
		}
		return false
	})
	return l
}

// stop cancels the listen, as Ctrl-C does, and waits for it to return.
func (l *runningListen) stop(t *testing.T) {
	t.Helper()
	l.cancel()
	select {
	case err := <-l.done:
		if err != nil {
			t.Errorf("pds webhooks listen returned %v\n%s", err, l.out.String())
		}
		l.done <- nil
	case <-time.After(30 * time.Second):
		t.Fatal("pds webhooks listen did not stop")
	}
}

// waitOutput polls out until ok holds, for up to 30 s.
func waitOutput(t *testing.T, out *testenv.Buffer, ok func(string) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok(out.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("not found in the output within 30 s:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waitLine(t *testing.T, out *testenv.Buffer, re *regexp.Regexp) []string {
	t.Helper()
	var m []string
	waitOutput(t, out, func(s string) bool {
		m = re.FindStringSubmatch(s)
		return m != nil
	})
	return m
}

// forwardTarget is a developer's receiver behind --forward-to: it answers
// 503 to its first request and 204 after, recording what it got.
type forwardTarget struct {
	*httptest.Server
	mu  sync.Mutex
	got []*http.Request
}

func newForwardTarget(t *testing.T) *forwardTarget {
	f := &forwardTarget{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		f.mu.Lock()
		f.got = append(f.got, r)
		n := len(f.got)
		f.mu.Unlock()
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *forwardTarget) requests() []*http.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*http.Request(nil), f.got...)
}

// TestWebhooksListen: on each engine, against a real pds serve WITHOUT
// --webhook-allow-private (an ordinary http subscription on loopback is
// still refused), pds webhooks listen removes a stale listener of this
// host, subscribes its own receiver, verifies and prints each delivery;
// with --forward-to it passes deliveries on with their headers, prints the
// receiver's status and answers with it, so that a 503 is retried; an
// invalid signature is answered 400; on exit its subscription is gone.
func TestWebhooksListen(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) { testWebhooksListen(t, eng.NewDatabase(t)) })
}

func testWebhooksListen(t *testing.T, db string) {
	fwd := newForwardTarget(t)
	serveOnce(t, db, func(base, key string) {
		call := func(method, path string, body any) (int, map[string]any) {
			t.Helper()
			return callAPI(t, base, key, method, path, body)
		}
		_, me := call("GET", "/me", nil)
		acc, _ := me["account_id"].(string)
		if acc == "" {
			t.Fatalf("GET /me: %v", me)
		}

		code, problem := call("POST", "/webhooks", map[string]any{"name": "dev", "target_url": "http://127.0.0.1:3000/hook", "events": []string{"person.created"}})
		if code != 400 || !strings.Contains(problem["errors"].([]any)[0].(map[string]any)["detail"].(string), `must use https, not "http"`) {
			t.Fatalf("an http loopback subscription without --webhook-allow-private: %d %v", code, problem)
		}

		// A listener killed hard left its subscription; its port now
		// refuses connections.
		gone, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		gone.Close()
		st, err := openStore(context.Background(), &commonFlags{database: db})
		if err != nil {
			t.Fatal(err)
		}
		stale := domain.Webhook{ID: domain.NewID("wh"), AccountID: acc, Name: listenerName(webhook.HostName(), 1),
			TargetURL: "http://" + gone.Addr().String() + "/", Events: domain.WebhookEvents, IsActive: true,
			Secret: webhook.NewSecret(), SecretVersion: 1, CreatedAt: time.Now(), UpdatedAt: time.Now(),
			LocalListener: true, ListenerHost: webhook.HostName()}
		if err := st.CreateWebhook(context.Background(), stale); err != nil {
			t.Fatal(err)
		}
		st.Close()

		plain := startListen(t, "--account", acc, "--database", db)
		if !strings.Contains(plain.out.String(), "Removed "+stale.ID) {
			t.Fatalf("the stale listener was not removed:\n%s", plain.out.String())
		}
		forward := startListen(t, "--account", acc, "--database", db, "--events", "person.created", "--forward-to", fwd.URL+"/hook")
		asJSON := startListen(t, "--account", acc, "--database", db, "--events", "person.updated", "--json", "--print-body")
		standard := startListen(t, "--account", acc, "--database", db, "--events", "person.created", "--signature-scheme", "standard-webhooks")
		code, list := call("GET", "/webhooks", nil)
		ids, schemes := map[string]string{}, map[string]string{}
		for _, it := range list["items"].([]any) {
			w := it.(map[string]any)
			ids[w["id"].(string)] = w["target_url"].(string)
			schemes[w["id"].(string)] = w["signature_scheme"].(string)
		}
		if code != 200 || len(ids) != 4 || ids[plain.id] != plain.url || ids[forward.id] != forward.url || ids[asJSON.id] != asJSON.url ||
			ids[standard.id] != standard.url || schemes[standard.id] != "standard-webhooks" || schemes[plain.id] != "pds" {
			t.Fatalf("GET /webhooks: %d %v; want the four listeners", code, list)
		}

		code, person := call("POST", "/persons", map[string]any{"email": "ada@x.test"})
		pid, _ := person["id"].(string)
		if code != 201 || pid == "" {
			t.Fatalf("POST /persons: %d %v", code, person)
		}
		line := waitLine(t, plain.out, regexp.MustCompile(`(?m)^\S+  person\.created  `+pid+`  delivery ([0-9a-f]{32})  attempt 1$`))
		// Verified by its Standard Webhooks headers.
		waitLine(t, standard.out, regexp.MustCompile(`(?m)^\S+  person\.created  `+pid+`  delivery ([0-9a-f]{32})  attempt 1$`))
		first := waitLine(t, forward.out, regexp.MustCompile(`(?m)^\S+  person\.created  `+pid+`  delivery ([0-9a-f]{32})  attempt 1  -> 503 Service Unavailable$`))
		// The 503 is pds's answer too, so pds retries (200 ms later).
		second := waitLine(t, forward.out, regexp.MustCompile(`(?m)^\S+  person\.created  `+pid+`  delivery ([0-9a-f]{32})  attempt 2  -> 204 No Content$`))
		if first[1] != second[1] || first[1] == line[1] {
			t.Fatalf("delivery ids: plain %s, forwarded %s then %s", line[1], first[1], second[1])
		}
		got := fwd.requests()
		if len(got) != 2 {
			t.Fatalf("the receiver got %d requests, want 2", len(got))
		}
		for _, r := range got {
			if r.URL.Path != "/hook" || r.Header.Get(webhookverify.HeaderSignature) == "" || r.Header.Get(webhookverify.HeaderDeliveryID) != first[1] ||
				r.Header.Get(webhookverify.HeaderEvent) != "person.created" || r.Header.Get(webhookverify.HeaderWebhookID) != forward.id ||
				r.Header.Get("User-Agent") != "pds-webhooks/0.0.0" || r.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("forwarded %s with headers %v", r.URL.Path, r.Header)
			}
			body, _ := io.ReadAll(r.Body)
			if !strings.Contains(string(body), `"id":"`+first[1]+`"`) || !strings.Contains(string(body), `"email":"ada@x.test"`) {
				t.Fatalf("forwarded body %s", body)
			}
		}
		if strings.Contains(asJSON.out.String(), "person.created") {
			t.Fatalf("a person.updated listener got person.created:\n%s", asJSON.out.String())
		}

		// A later change, after the window: person.updated, to the
		// listeners of that event only, the body printed.
		if code, _ := call("PATCH", "/persons/"+pid, map[string]any{"first_name": "Ada"}); code != 200 {
			t.Fatalf("PATCH: %d", code)
		}
		waitLine(t, plain.out, regexp.MustCompile(`(?m)^\S+  person\.updated  `+pid+`  delivery [0-9a-f]{32}  attempt 1$`))
		var rec struct {
			Event      string `json:"event"`
			PersonID   string `json:"person_id"`
			DeliveryID string `json:"delivery_id"`
			Attempt    int    `json:"attempt"`
			Answered   int    `json:"answered"`
			Body       struct {
				ID   string `json:"id"`
				Data struct {
					ID        string `json:"id"`
					FirstName string `json:"first_name"`
				} `json:"data"`
			} `json:"body"`
		}
		waitOutput(t, asJSON.out, func(s string) bool {
			sc := bufio.NewScanner(strings.NewReader(s))
			for sc.Scan() {
				if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Event == "person.updated" {
					return true
				}
			}
			return false
		})
		if rec.Attempt != 1 || rec.Answered != 200 || rec.PersonID != pid || rec.Body.ID != rec.DeliveryID || rec.Body.Data.ID != pid || rec.Body.Data.FirstName != "Ada" {
			t.Fatalf("JSON line %+v", rec)
		}
		if n := strings.Count(forward.out.String(), "person.updated"); n != 0 {
			t.Fatalf("a person.created listener got person.updated:\n%s", forward.out.String())
		}

		// Anything that is not a delivery of its subscription is refused.
		bogus, _ := http.NewRequest("POST", plain.url, strings.NewReader(`{"id":"x","event":"person.created"}`))
		bogus.Header.Set(webhookverify.HeaderDeliveryID, "0123")
		bogus.Header.Set(webhookverify.HeaderSignature, "t=1,v1=00")
		res, err := http.DefaultClient.Do(bogus)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 400 {
			t.Fatalf("a bad signature answered %d", res.StatusCode)
		}
		waitLine(t, plain.out, regexp.MustCompile(`INVALID SIGNATURE \(Service-Delivery-Id 0123\): webhookverify: .*; answered 400`))

		// A Standard Webhooks listener wants those headers: a delivery
		// signed with its secret the pds way only is refused.
		st, err = openStore(context.Background(), &commonFlags{database: db})
		if err != nil {
			t.Fatal(err)
		}
		sub, err := st.GetWebhook(context.Background(), acc, standard.id)
		st.Close()
		if err != nil {
			t.Fatal(err)
		}
		body := []byte(`{"id":"0123","event":"person.created"}`)
		pdsOnly, _ := http.NewRequest("POST", standard.url, bytes.NewReader(body))
		webhook.SetHeaders(pdsOnly.Header, domain.Delivery{ID: "0123", WebhookID: sub.ID, Event: "person.created", Body: body}, sub.Secret, time.Now())
		if res, err = http.DefaultClient.Do(pdsOnly); err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 400 {
			t.Fatalf("a Standard Webhooks listener answered %d to a delivery signed the pds way only", res.StatusCode)
		}
		waitLine(t, standard.out, regexp.MustCompile(`INVALID SIGNATURE \(Service-Delivery-Id 0123\): webhookverify: .*webhook-id; answered 400`))
		standard.stop(t)

		// Ctrl-C removes each listener's subscription, and only its own.
		plain.stop(t)
		if !strings.Contains(plain.out.String(), "Stopped; removed subscription "+plain.id) {
			t.Fatalf("output at exit:\n%s", plain.out.String())
		}
		if code, _ := call("GET", "/webhooks/"+plain.id, nil); code != 404 {
			t.Fatalf("after the listener stopped, its subscription reads %d", code)
		}
		if code, _ := call("GET", "/webhooks/"+forward.id, nil); code != 200 {
			t.Fatalf("another listener's subscription reads %d", code)
		}
		forward.stop(t)
		asJSON.stop(t)
		if code, list := call("GET", "/webhooks", nil); code != 200 || list["total"].(float64) != 0 {
			t.Fatalf("after every listener stopped: %d %v", code, list)
		}
	}, "--webhook-window", "100ms", "--webhook-retry-schedule", "0s,200ms,1s")
}

// TestWebhooksListenRefusals: bad flags are usage errors before anything
// is opened; -h documents the command.
func TestWebhooksListenRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "pds.db")
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "--account is required"},
		{[]string{"--account", "acc_x", "--events", "person.archived"}, `--events (PDS_EVENTS) "person.archived": "person.archived" is not an event`},
		{[]string{"--account", "acc_x", "--events", "person.created,person.created"}, "listed twice"},
		{[]string{"--account", "acc_x", "--events", ""}, `"" is not an event`},
		{[]string{"--account", "acc_x", "--forward-to", "localhost:3000"}, `--forward-to (PDS_FORWARD_TO) "localhost:3000": not an absolute http or https URL; e.g. --forward-to http://localhost:3000/hook`},
		{[]string{"--account", "acc_x", "--port", "70000"}, `--port (PDS_PORT) "70000": not a port`},
		{[]string{"--account", "acc_x", "--signature-scheme", "svix"}, `--signature-scheme (PDS_SIGNATURE_SCHEME) "svix": not pds or standard-webhooks; e.g. --signature-scheme standard-webhooks`},
		{[]string{"--account", "acc_x", "extra"}, `unexpected argument "extra"`},
	} {
		out, err := pds(t, append([]string{"webhooks", "listen", "--database", db}, c.args...)...)
		if err == nil || exitStatus(err) != 2 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v (exit %d) %s, want a usage error containing %q", c.args, err, exitStatus(err), out, c.want)
		}
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, "*")); len(matches) != 0 {
		t.Errorf("files made before the settings were refused: %v", matches)
	}
	if _, err := pds(t, "webhooks", "listen", "--database", db, "--account", "acc_missing"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("an unknown account: %v", err)
	}
	if _, err := pds(t, "webhooks", "hear"); err == nil || exitStatus(err) != 2 {
		t.Errorf("pds webhooks hear: %v", err)
	}
	out, err := pds(t, "webhooks", "listen", "-h")
	if err != nil || !strings.Contains(out, "--forward-to URL passes each verified delivery on") || !strings.Contains(out, "--print-body") {
		t.Errorf("pds webhooks listen -h: %v\n%s", err, out)
	}
}
