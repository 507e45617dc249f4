package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/pkg/webhookverify"
)

// The crash test under load: the real pds binary serves 16 concurrent
// writers and is SIGKILLed 10 times at random moments, restarted each time
// on the same database. At the end every write the server acknowledged
// (2xx) must be there with the value it acknowledged, and every person
// change must have reached a real HTTPS webhook receiver. Its randomness (the
// kills, the writers' choices) comes from one logged seed; set
// PDS_CRASH_SEED to replay a failing run's choices (timing still varies).
const (
	crashWriters  = 16
	crashKills    = 10
	crashWindow   = time.Second
	crashSchedule = "0s,100ms,200ms,300ms,500ms,500ms,1s,1s,1s,1s"
	// crashDrain bounds the wait for the last deliveries. Work a killed
	// server had claimed stays leased to it: a burst for a minute, a
	// delivery for 30s + the attempt timeout + 30s (internal/webhook), so
	// the bound covers one lease after the last kill, and the time a busy
	// machine takes to close and send what was held.
	crashDrain = 3 * time.Minute
	// crashField is the custom field the writers set.
	crashField = "crash_color"
)

// crashFields are the person attributes the writers write; each value a
// writer sends is unique, so a value read back names the write that put it.
var crashFields = []string{"first_name", "last_name", crashField}

func TestCrashUnderLoadLosesNothing(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the crash test under load takes a minute or more; skipped with -short")
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("PDS_CRASH_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("PDS_CRASH_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (replay its choices with PDS_CRASH_SEED=%d)", seed, seed)
	bin := buildPDS(t)
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		crashRun(t, bin, eng.NewDatabase(t), seed)
	})
}

// buildPDS builds the real binary (no race detector, as it ships), once for
// both engines.
func buildPDS(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "pds")
	start := time.Now()
	// go test puts its own GOROOT/bin first on the test's PATH.
	out, err := exec.Command("go", "build", "-o", bin, "github.com/pds-dev/pds/cmd/pds").CombinedOutput()
	if err != nil {
		t.Fatalf("go build ./cmd/pds: %v\n%s", err, out)
	}
	t.Logf("built pds in %s", time.Since(start).Round(time.Millisecond))
	return bin
}

// admin runs an administrative command of the binary and decodes its --json
// output.
func admin(t *testing.T, bin, database string, args ...string) map[string]any {
	t.Helper()
	cmd := exec.Command(bin, append(args, "--database", database, "--json")...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pds %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("pds %s printed %q: %v", strings.Join(args, " "), out, err)
	}
	return v
}

// crashProc is one pds serve process.
type crashProc struct {
	cmd  *exec.Cmd
	base string
	// metrics is the base URL of its --metrics-addr listener, if any.
	metrics string
	// acks counts the writes this process acknowledged.
	acks atomic.Int64
}

// crashServer starts and kills pds serve processes on one database and keeps
// the warnings and errors they log.
type crashServer struct {
	// name tells this server's log lines from another's in a shared logs.
	name string
	bin  string
	args []string
	logs *testenv.Buffer
	cur  atomic.Pointer[crashProc] // the process serving now
	n    int
}

func (s *crashServer) start(t *testing.T) {
	t.Helper()
	s.n++
	cmd := exec.Command(s.bin, append([]string{"serve", "--addr", "127.0.0.1:0"}, s.args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := make(chan servingAddrs, 1)
	go s.readLog(s.n, stderr, addr)
	select {
	case a := <-addr:
		if a.api == "" {
			_ = cmd.Wait()
			t.Fatalf("pds serve (start %d) stopped before serving:\n%s", s.n, s.logs.String())
		}
		p := &crashProc{cmd: cmd, base: "http://" + a.api}
		if a.metrics != "" {
			p.metrics = "http://" + a.metrics
		}
		s.cur.Store(p)
	case <-time.After(30 * time.Second):
		t.Fatalf("pds serve (start %d) did not come up in 30s:\n%s", s.n, s.logs.String())
	}
}

// servingAddrs are the addresses a server logged it serves on.
type servingAddrs struct{ api, metrics string }

// readLog reads a server's JSON log: it sends the address of the "serving"
// line ("" if the log ends first), with the metrics listener's if one was
// logged before it, and keeps every line above INFO.
func (s *crashServer) readLog(n int, r io.Reader, addr chan<- servingAddrs) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	sent := false
	var metrics string
	for sc.Scan() {
		var line struct{ Msg, Addr, Level, Error string }
		// The receiver's 503s are retried by design and the test allows
		// private targets; everything else above INFO is worth reading
		// when the test fails.
		if json.Unmarshal(sc.Bytes(), &line) != nil || (line.Level != "INFO" && line.Level != "DEBUG" &&
			!(line.Msg == "webhook attempt" && line.Error == "HTTP 503 Service Unavailable") &&
			!strings.HasPrefix(line.Msg, "WEBHOOK TARGETS MAY BE PRIVATE")) {
			fmt.Fprintf(s.logs, "[%sstart %d] %s\n", s.name, n, sc.Bytes())
		}
		if line.Msg == "serving metrics" {
			metrics = line.Addr
		}
		if !sent && line.Msg == "serving" {
			addr <- servingAddrs{api: line.Addr, metrics: metrics}
			sent = true
		}
	}
	if !sent {
		addr <- servingAddrs{}
	}
}

// kill ends the process as a crash or an OOM kill would: SIGKILL, no
// shutdown.
func (s *crashServer) kill(t *testing.T) {
	t.Helper()
	cur := s.cur.Load()
	if err := cur.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cur.cmd.Wait()
}

// crashClient calls the API of whichever process serves now.
type crashClient struct {
	srv  *crashServer
	key  string
	http *http.Client
	// observe, when set, hears of every answer (or transport error).
	observe func(a answer)
}

// answer is what one request got.
type answer struct {
	method, path string
	start        time.Time
	took         time.Duration
	status       int
	header       http.Header
	body         []byte
	err          error
}

// do sends one request to the process serving now; err is a transport
// failure (the server down or killed mid-request), whose outcome is unknown.
func (c *crashClient) do(method, path string, body any, header map[string]string) (int, []byte, error) {
	proc := c.srv.cur.Load()
	var r io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		r = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, proc.base+path, r)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	start := time.Now()
	res, err := c.http.Do(req)
	var raw []byte
	if err == nil {
		raw, err = io.ReadAll(res.Body)
		res.Body.Close()
	}
	if c.observe != nil {
		a := answer{method: method, path: path, start: start, took: time.Since(start), body: raw, err: err}
		if res != nil {
			a.status, a.header = res.StatusCode, res.Header
		}
		c.observe(a)
	}
	if err != nil {
		return 0, nil, err
	}
	if res.StatusCode/100 == 2 {
		proc.acks.Add(1)
	}
	return res.StatusCode, raw, nil
}

// must sends a request that has to succeed with want (the set-up and the
// final reads, with the server up).
func (c *crashClient) must(t *testing.T, method, path string, body any, want int, out any) {
	t.Helper()
	status, raw, err := c.do(method, path, body, nil)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if status != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, status, raw, want)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, raw)
		}
	}
}

// crashPersonView is what the test reads of a person, from the API or from
// a delivery's data.
type crashPersonView struct {
	ID           string            `json:"id"`
	ExternalID   *string           `json:"external_id"`
	FirstName    *string           `json:"first_name"`
	LastName     *string           `json:"last_name"`
	CustomFields map[string]string `json:"custom_fields"`
	TagIDs       []string          `json:"tag_ids"`
}

func (v crashPersonView) field(name string) *string {
	switch name {
	case "first_name":
		return v.FirstName
	case "last_name":
		return v.LastName
	}
	if s, ok := v.CustomFields[name]; ok {
		return &s
	}
	return nil
}

// crashDelivery is one verified delivery the receiver got.
type crashDelivery struct {
	id, event string
	data      crashPersonView
}

// crashReceiver is the subscriber: a real HTTPS endpoint that verifies every
// delivery with pkg/webhookverify, answers some with 503 so that retries
// run too, and keeps what verified, by person.
type crashReceiver struct {
	srv *httptest.Server

	mu       sync.Mutex
	secret   string
	rng      *rand.Rand
	byPerson map[string][]crashDelivery
	attempts int
	refused  []string // requests that did not verify, or not decode
}

const crashReceiverFailRate = 0.05

// crashReceiverIdle is how long the receiver keeps a connection that
// carries no request: the fault tests count what the servers hold once
// they are idle.
const crashReceiverIdle = 500 * time.Millisecond

func newCrashReceiver(t *testing.T, seed uint64) *crashReceiver {
	rc := &crashReceiver{rng: rand.New(rand.NewPCG(seed, 1)), byPerson: map[string][]crashDelivery{}}
	rc.srv = httptest.NewUnstartedServer(http.HandlerFunc(rc.serve))
	// A server killed in the middle of a TLS handshake is expected here.
	rc.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	rc.srv.Config.IdleTimeout = crashReceiverIdle
	// IdleTimeout covers a connection between requests only; one that a
	// worker dialled for an attempt that then went out on another
	// connection has carried none, and without a deadline on its first
	// request it stayed open as long as the worker kept it (its idle
	// timeout, 90 s), counted as left behind.
	rc.srv.Config.ReadHeaderTimeout = crashReceiverIdle
	rc.srv.StartTLS()
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *crashReceiver) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.attempts++
	if err != nil {
		rc.refused = append(rc.refused, "unreadable body: "+err.Error())
		http.Error(w, "unreadable body", http.StatusBadRequest)
		return
	}
	if err := webhookverify.Verify(r.Header, body, []string{rc.secret}, time.Now(), webhookverify.Options{}); err != nil {
		rc.refused = append(rc.refused, "signature: "+err.Error())
		http.Error(w, "signature does not verify", http.StatusBadRequest)
		return
	}
	if rc.rng.Float64() < crashReceiverFailRate {
		http.Error(w, "try again", http.StatusServiceUnavailable)
		return
	}
	var env struct {
		ID    string          `json:"id"`
		Event string          `json:"event"`
		Data  crashPersonView `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil || env.ID != r.Header.Get(webhookverify.HeaderDeliveryID) ||
		env.Event != r.Header.Get(webhookverify.HeaderEvent) || env.Data.ID == "" {
		rc.refused = append(rc.refused, fmt.Sprintf("body %s (%v) does not match its headers", body, err))
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	rc.byPerson[env.Data.ID] = append(rc.byPerson[env.Data.ID], crashDelivery{id: env.ID, event: env.Event, data: env.Data})
	w.WriteHeader(http.StatusNoContent)
}

// crashAttempt is one write of a field's value; acked when the server answered
// it with a 2xx. A write that was not acknowledged may or may not have
// happened.
type crashAttempt struct {
	value string
	acked bool
}

// crashPerson is one person as its only writer knows it.
type crashPerson struct {
	ext     string
	id      string // "" until a write of it was acknowledged
	created bool   // its creation was acknowledged (a 201 upsert, or a breadcrumb naming it first)
	changed bool   // some change of it was acknowledged
	fields  map[string][]crashAttempt
	tags    map[string]bool // acknowledged attaches
}

// accepted is what a field may hold at the end: the value of its last
// acknowledged write, or of any write sent after it, which may have
// happened; nil when no write of the field was acknowledged.
func (p *crashPerson) accepted(field string) []string {
	as := p.fields[field]
	for i := len(as) - 1; i >= 0; i-- {
		if as[i].acked {
			out := make([]string, 0, len(as)-i)
			for _, a := range as[i:] {
				out = append(out, a.value)
			}
			return out
		}
	}
	return nil
}

// mismatch says how v falls short of p's acknowledged state ("" when it
// does not): every field at its last acknowledged value or a later one,
// every acknowledged tag held.
func (p *crashPerson) mismatch(v crashPersonView) string {
	var bad []string
	if v.ExternalID == nil || *v.ExternalID != p.ext {
		bad = append(bad, fmt.Sprintf("external_id %v, want %s", orNull(v.ExternalID), p.ext))
	}
	for _, f := range crashFields {
		ok := p.accepted(f)
		if ok == nil {
			continue
		}
		if got := v.field(f); got == nil || !slices.Contains(ok, *got) {
			bad = append(bad, fmt.Sprintf("%s %s, want one of %v", f, orNull(got), ok))
		}
	}
	for tag := range p.tags {
		if !slices.Contains(v.TagIDs, tag) {
			bad = append(bad, fmt.Sprintf("tag %s missing from %v", tag, v.TagIDs))
		}
	}
	sort.Strings(bad)
	return strings.Join(bad, "; ")
}

func orNull(s *string) string {
	if s == nil {
		return "null"
	}
	return strconv.Quote(*s)
}

// crashBreadcrumb is an acknowledged Append Breadcrumb.
type crashBreadcrumb struct{ id, personID string }

// crashWriter writes persons of its own (external ids w<n>-p<i>), so that
// the last acknowledged value of each field is well defined.
type crashWriter struct {
	n      int
	c      *crashClient
	rng    *rand.Rand
	tags   []string
	seq    int
	people []*crashPerson

	breadcrumbs []crashBreadcrumb
	acked       map[string]int
	unknown     int      // requests whose outcome is unknown (transport errors, 5xx)
	unexpected  []string // 4xx answers, which no write of this test should get
	fiveXX      []string
}

func (w *crashWriter) value(field string) string {
	w.seq++
	return fmt.Sprintf("w%d-%s-%d", w.n, field, w.seq)
}

// pick returns one of the writer's persons; known: only one whose id an
// acknowledged write gave.
func (w *crashWriter) pick(known bool) *crashPerson {
	var from []*crashPerson
	if known {
		for _, p := range w.people {
			if p.id != "" {
				from = append(from, p)
			}
		}
	} else {
		from = w.people
	}
	if len(from) == 0 {
		return nil
	}
	return from[w.rng.IntN(len(from))]
}

func (w *crashWriter) newPerson() *crashPerson {
	p := &crashPerson{ext: fmt.Sprintf("w%d-p%d", w.n, len(w.people)), fields: map[string][]crashAttempt{}, tags: map[string]bool{}}
	w.people = append(w.people, p)
	return p
}

// personBody picks some of the fields (at least one) and new values for them,
// and returns the body and the attempts to record.
func (w *crashWriter) personBody(all bool) (map[string]any, map[string]string) {
	body := map[string]any{}
	vals := map[string]string{}
	for len(vals) == 0 {
		for _, f := range crashFields {
			if all || w.rng.IntN(2) == 0 {
				vals[f] = w.value(f)
			}
		}
	}
	for f, v := range vals {
		if f == crashField {
			body["custom_fields"] = map[string]any{crashField: v}
		} else {
			body[f] = v
		}
	}
	return body, vals
}

// run writes until stop closes.
func (w *crashWriter) run(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		w.step()
	}
}

func (w *crashWriter) step() {
	op := w.rng.IntN(100)
	switch {
	case op < 15 || len(w.people) == 0:
		p := w.newPerson()
		body, vals := w.personBody(true)
		body["external_id"] = p.ext
		body["email"] = p.ext + "@crash.test"
		w.upsert(p, body, vals, "upsert new")
	case op < 35:
		p := w.pick(false)
		body, vals := w.personBody(false)
		body["external_id"] = p.ext
		w.upsert(p, body, vals, "upsert matched")
	case op < 55:
		p := w.pick(true)
		if p == nil {
			return
		}
		body, vals := w.personBody(false)
		var out crashPersonView
		ok := w.send("PATCH", "/persons/"+p.id, body, nil, "patch", &out)
		p.changed = p.changed || ok
		w.record(p, vals, ok)
	case op < 70:
		p := w.pick(true)
		if p == nil {
			return
		}
		tag := w.tags[w.rng.IntN(len(w.tags))]
		var out crashPersonView
		if w.send("POST", "/persons/"+p.id+"/tags", map[string]any{"tag_ids": []string{tag}}, nil, "tag", &out) {
			// Attaching a tag the person holds changes nothing, and fires
			// nothing; a new one is a change.
			if !p.tags[tag] {
				p.changed = true
			}
			p.tags[tag] = true
		}
	case op < 90:
		p := w.pick(true)
		if p == nil {
			return
		}
		w.breadcrumb(map[string]any{"flavor": "page_view", "person_id": p.id}, nil)
	default:
		// A breadcrumb for a person nobody made yet creates it from its
		// external_id, and that creation is a person.created.
		p := w.newPerson()
		w.breadcrumb(map[string]any{"flavor": "form_submission", "external_id": p.ext}, p)
	}
}

func (w *crashWriter) upsert(p *crashPerson, body map[string]any, vals map[string]string, kind string) {
	var out crashPersonView
	status := 0
	ok := w.sendStatus("POST", "/persons", body, nil, kind, &out, &status)
	if ok {
		if p.id != "" && out.ID != p.id {
			w.unexpected = append(w.unexpected, fmt.Sprintf("%s %s: id %s, earlier %s", kind, p.ext, out.ID, p.id))
		}
		p.id = out.ID
		p.changed = true
		if status == http.StatusCreated {
			p.created = true
		}
	}
	w.record(p, vals, ok)
}

func (w *crashWriter) record(p *crashPerson, vals map[string]string, acked bool) {
	for _, f := range crashFields {
		if v, ok := vals[f]; ok {
			p.fields[f] = append(p.fields[f], crashAttempt{value: v, acked: acked})
		}
	}
}

// breadcrumb appends one; made is the person the breadcrumb creates, if it
// names a new one by external_id.
func (w *crashWriter) breadcrumb(body map[string]any, made *crashPerson) {
	w.seq++
	key := fmt.Sprintf("w%d-b%d", w.n, w.seq)
	var out struct {
		ID       string `json:"id"`
		PersonID string `json:"person_id"`
	}
	if !w.send("POST", "/breadcrumbs", body, map[string]string{"Idempotency-Key": key}, "breadcrumb", &out) {
		return
	}
	w.breadcrumbs = append(w.breadcrumbs, crashBreadcrumb{id: out.ID, personID: out.PersonID})
	if made != nil {
		// Its external_id was new, so the breadcrumb created the person.
		made.id, made.created, made.changed = out.PersonID, true, true
	}
}

func (w *crashWriter) send(method, path string, body any, header map[string]string, kind string, out any) bool {
	var status int
	return w.sendStatus(method, path, body, header, kind, out, &status)
}

// sendStatus sends one write and reports whether it was acknowledged (2xx,
// its body decoded into out).
func (w *crashWriter) sendStatus(method, path string, body any, header map[string]string, kind string, out any, status *int) bool {
	code, raw, err := w.c.do(method, path, body, header)
	*status = code
	switch {
	case err != nil:
		w.unknown++
		// Most likely the server is down: give it a moment to come back.
		time.Sleep(time.Duration(5+w.rng.IntN(20)) * time.Millisecond)
		return false
	case code >= 500:
		w.unknown++
		w.fiveXX = append(w.fiveXX, fmt.Sprintf("%s %s: %d %s", method, path, code, raw))
		// A refusal says to retry shortly (Retry-After); a moment is
		// enough here, where the answers during a fault are the point.
		time.Sleep(time.Duration(20+w.rng.IntN(50)) * time.Millisecond)
		return false
	case code >= 300:
		w.unexpected = append(w.unexpected, fmt.Sprintf("%s %s: %d %s", method, path, code, raw))
		return false
	}
	if err := json.Unmarshal(raw, out); err != nil {
		w.unexpected = append(w.unexpected, fmt.Sprintf("%s %s: %d with a body that does not decode: %v", method, path, code, err))
		return false
	}
	w.acked[kind]++
	return true
}

func crashRun(t *testing.T, bin, database string, seed uint64) {
	began := time.Now()
	srv, c, rc, tags := crashSetUp(t, bin, database, seed)
	writers := crashLoad(t, srv, c, tags, seed)

	acked := map[string]int{}
	unknown := 0
	var unexpected, fiveXX []string
	var people []*crashPerson
	var breadcrumbs []crashBreadcrumb
	for _, w := range writers {
		for k, n := range w.acked {
			acked[k] += n
		}
		unknown += w.unknown
		unexpected = append(unexpected, w.unexpected...)
		fiveXX = append(fiveXX, w.fiveXX...)
		people = append(people, w.people...)
		breadcrumbs = append(breadcrumbs, w.breadcrumbs...)
	}
	t.Logf("acknowledged %v; %d requests with an unknown outcome (%d of them answered 5xx)", acked, unknown, len(fiveXX))
	for _, s := range fiveXX[:min(5, len(fiveXX))] {
		t.Logf("5xx: %s", s)
	}
	if len(unexpected) > 0 {
		t.Errorf("%d writes got an answer no write of this test should get; the first:\n%s",
			len(unexpected), strings.Join(unexpected[:min(5, len(unexpected))], "\n"))
	}
	crashCheckStored(t, c, people, breadcrumbs, began)
	crashCheckDelivered(t, rc, people)
	t.Logf("total %s", time.Since(began).Round(time.Millisecond))
}

// crashSetUp makes the account and its key with the binary's administrative
// commands, starts the receiver and the first server, and makes through the
// API the custom field, the tags the writers attach and the subscription.
func crashSetUp(t *testing.T, bin, database string, seed uint64, serveArgs ...string) (*crashServer, *crashClient, *crashReceiver, []string) {
	admin(t, bin, database, "migrate")
	account := admin(t, bin, database, "accounts", "create", "--name", "crash")["id"].(string)
	key := admin(t, bin, database, "keys", "create", "--account", account, "--scopes", "all", "--name", "crash-writers",
		"--rate-limit", "1000000")["key"].(string)

	rc := newCrashReceiver(t, seed)
	caFile := filepath.Join(t.TempDir(), "receiver.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rc.srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := &crashServer{bin: bin, logs: &testenv.Buffer{}, args: []string{
		"--database", database,
		"--webhook-allow-private", "--webhook-ca-file", caFile,
		"--webhook-window", crashWindow.String(), "--webhook-retry-schedule", crashSchedule, "--webhook-timeout", "5s",
	}}
	srv.args = append(srv.args, serveArgs...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("warnings and errors the servers logged:\n%s", tail(srv.logs.String(), 100))
		}
	})
	srv.start(t)

	transport := &http.Transport{MaxIdleConnsPerHost: crashWriters + 4}
	t.Cleanup(transport.CloseIdleConnections)
	c := &crashClient{srv: srv, key: key, http: &http.Client{Transport: transport, Timeout: 30 * time.Second}}

	c.must(t, "POST", "/custom-fields", map[string]any{"collection": "Person", "data_type": "str", "key": crashField}, 201, nil)
	var tags []string
	for i := range 4 {
		var tag struct{ ID string }
		c.must(t, "POST", "/tags", map[string]any{"name": fmt.Sprintf("crash-%d", i), "context": "person"}, 201, &tag)
		tags = append(tags, tag.ID)
	}
	var hook struct{ Secret string }
	c.must(t, "POST", "/webhooks", map[string]any{"name": "crash", "target_url": rc.srv.URL + "/hooks/pds",
		"events": []string{"person.created", "person.updated"}}, 201, &hook)
	rc.mu.Lock()
	rc.secret = hook.Secret
	rc.mu.Unlock()
	return srv, c, rc, tags
}

// crashLoad runs the writers while the server is killed and restarted
// crashKills times, at moments drawn from the seed, and returns them once
// they stopped.
func crashLoad(t *testing.T, srv *crashServer, c *crashClient, tags []string, seed uint64) []*crashWriter {
	rng := rand.New(rand.NewPCG(seed, 0))
	stop := make(chan struct{})
	writers := make([]*crashWriter, crashWriters)
	var wg sync.WaitGroup
	for i := range writers {
		w := &crashWriter{n: i, c: c, rng: rand.New(rand.NewPCG(seed, uint64(100+i))), tags: tags, acked: map[string]int{}}
		writers[i] = w
		wg.Go(func() { w.run(stop) })
	}
	start := time.Now()
	for k := 1; k <= crashKills; k++ {
		// The kill comes at a random moment once the server takes writes:
		// a fresh PostgreSQL-backed process needs a moment (its connections)
		// before it answers, and a life that acknowledged nothing would
		// test little.
		warm := crashTakingWrites(srv.cur.Load())
		up := time.Duration(100+rng.IntN(1400)) * time.Millisecond
		time.Sleep(up)
		acks := srv.cur.Load().acks.Load()
		srv.kill(t)
		down := time.Duration(rng.IntN(300)) * time.Millisecond
		time.Sleep(down)
		restart := time.Now()
		srv.start(t)
		t.Logf("kill %d: first write acknowledged %s after serving, killed %s later (%d writes acknowledged); down %s, serving again in %s",
			k, warm.Round(time.Millisecond), up, acks, down, time.Since(restart).Round(time.Millisecond))
	}
	// The last server takes writes for a while too, then the writers stop.
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	t.Logf("load with %d kills: %s", crashKills, time.Since(start).Round(time.Millisecond))
	return writers
}

// crashTakingWrites waits, at most 10s, until p acknowledged a write, and
// says how long that took from now.
func crashTakingWrites(p *crashProc) time.Duration {
	start := time.Now()
	for p.acks.Load() == 0 && time.Since(start) < 10*time.Second {
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(start)
}

// crashCheckStored reads every person and breadcrumb back: each
// acknowledged person with its acknowledged values and tags, each
// acknowledged breadcrumb on its person.
func crashCheckStored(t *testing.T, c *crashClient, people []*crashPerson, breadcrumbs []crashBreadcrumb, began time.Time) {
	stored := map[string]crashPersonView{}
	since := url.QueryEscape(began.Add(-time.Minute).UTC().Format(time.RFC3339))
	for page := 1; ; page++ {
		var pg struct {
			Items []crashPersonView
			Total int
		}
		c.must(t, "GET", fmt.Sprintf("/persons?updated_since=%s&size=100&page=%d", since, page), nil, 200, &pg)
		for _, p := range pg.Items {
			stored[p.ID] = p
		}
		if page*100 >= pg.Total {
			break
		}
	}
	var lost []string
	withID := 0
	for _, p := range people {
		if p.id == "" {
			continue
		}
		withID++
		v, ok := stored[p.id]
		if !ok {
			lost = append(lost, fmt.Sprintf("person %s (%s) is gone", p.id, p.ext))
			continue
		}
		if m := p.mismatch(v); m != "" {
			lost = append(lost, fmt.Sprintf("person %s (%s): %s", p.id, p.ext, m))
		}
	}
	listed := map[string]string{}
	for page := 1; ; page++ {
		var pg struct {
			Items []struct {
				ID       string `json:"id"`
				PersonID string `json:"person_id"`
			}
			Total int
		}
		c.must(t, "GET", fmt.Sprintf("/breadcrumbs?size=100&page=%d", page), nil, 200, &pg)
		for _, b := range pg.Items {
			listed[b.ID] = b.PersonID
		}
		if page*100 >= pg.Total {
			break
		}
	}
	for _, b := range breadcrumbs {
		if got, ok := listed[b.id]; !ok {
			lost = append(lost, fmt.Sprintf("breadcrumb %s (person %s) is gone", b.id, b.personID))
		} else if got != b.personID {
			lost = append(lost, fmt.Sprintf("breadcrumb %s is on person %s, acknowledged on %s", b.id, got, b.personID))
		}
	}
	t.Logf("%d persons acknowledged (%d stored), %d breadcrumbs acknowledged (%d listed)", withID, len(stored), len(breadcrumbs), len(listed))
	if len(lost) > 0 {
		t.Errorf("%d acknowledged writes lost:\n%s", len(lost), strings.Join(lost[:min(20, len(lost))], "\n"))
	}
}

// crashCheckDelivered waits, at most crashDrain, until every acknowledged
// change reached the subscription: for each person changed, a delivery
// showing at least its last acknowledged state (coalescing may have folded
// several changes into it), and for each creation acknowledged, a
// person.created.
func crashCheckDelivered(t *testing.T, rc *crashReceiver, people []*crashPerson) {
	start := time.Now()
	report := time.Duration(0)
	for {
		var missing []string
		rc.mu.Lock()
		for _, p := range people {
			if p.id == "" || !p.changed {
				continue
			}
			got := rc.byPerson[p.id]
			matched, created := false, false
			for _, d := range got {
				matched = matched || p.mismatch(d.data) == ""
				created = created || d.event == "person.created"
			}
			switch {
			case !matched:
				latest := "none"
				if len(got) > 0 {
					latest = p.mismatch(got[len(got)-1].data)
				}
				missing = append(missing, fmt.Sprintf("person %s (%s): %d deliveries, none with its last acknowledged state (the latest: %s)",
					p.id, p.ext, len(got), latest))
			case p.created && !created:
				missing = append(missing, fmt.Sprintf("person %s (%s): creation acknowledged, but no person.created among its %d deliveries",
					p.id, p.ext, len(got)))
			}
		}
		refused := slices.Clone(rc.refused)
		attempts := rc.attempts
		rc.mu.Unlock()
		if len(refused) > 0 {
			t.Fatalf("the receiver refused %d deliveries; the first: %s", len(refused), refused[0])
		}
		waited := time.Since(start)
		if len(missing) == 0 {
			t.Logf("every change delivered %s after the writers stopped (%d delivery attempts received)", waited.Round(time.Millisecond), attempts)
			return
		}
		if waited > crashDrain {
			t.Fatalf("%d changed persons still lack a delivery of their acknowledged state %s after the writers stopped:\n%s",
				len(missing), crashDrain, strings.Join(missing[:min(20, len(missing))], "\n"))
		}
		if waited >= report {
			t.Logf("%s after the writers stopped, %d changed persons lack a delivery", report, len(missing))
			report += 10 * time.Second
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("(%d earlier lines left out)", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}
