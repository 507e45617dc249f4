package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The fault tests run the real pds binary on a database that stops,
// restarts after a crash, freezes or runs out of disk, under concurrent
// writers, with a webhook subscription on a real HTTPS receiver. What they
// hold: from a fault's start until every instance writes again, every
// answer is a success or a plain refusal (503 problem+json with
// Retry-After and a cause) and none takes longer than faultAnswerBound;
// every instance writes again within faultRecoverBound of the fault's end,
// with no restart; nothing acknowledged is lost; every change reaches the
// subscription, once; and no goroutine or file descriptor is left behind.
const (
	faultWriters      = 8
	faultAnswerBound  = 5 * time.Second
	faultRecoverBound = 5 * time.Second
)

// faultRig is pds serve instances on one database under faultWriters
// concurrent writers, spread over the instances.
type faultRig struct {
	t       *testing.T
	servers []*crashServer
	clients []*crashClient
	rc      *crashReceiver
	writers []*crashWriter

	mu      sync.Mutex
	answers [][]answer // per instance

	stop chan struct{}
	wg   sync.WaitGroup
}

func newFaultRig(t *testing.T, bin, database string, instances int, serveArgs ...string) *faultRig {
	return newFaultRigOf(t, bin, database, instances, faultWriters, serveArgs...)
}

// newFaultRigOf is newFaultRig with writers concurrent writers.
func newFaultRigOf(t *testing.T, bin, database string, instances, writers int, serveArgs ...string) *faultRig {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	srv, c, rc, tags := crashSetUp(t, bin, database, seed, append([]string{"--metrics-addr", "127.0.0.1:0"}, serveArgs...)...)
	r := &faultRig{t: t, servers: []*crashServer{srv}, clients: []*crashClient{c}, rc: rc}
	srv.name = "instance 0 "
	for i := 1; i < instances; i++ {
		s := &crashServer{name: fmt.Sprintf("instance %d ", i), bin: bin, logs: srv.logs, args: srv.args}
		s.start(t)
		r.servers = append(r.servers, s)
		r.clients = append(r.clients, &crashClient{srv: s, key: c.key, http: c.http})
	}
	r.answers = make([][]answer, instances)
	for i, cl := range r.clients {
		cl.observe = func(a answer) {
			r.mu.Lock()
			r.answers[i] = append(r.answers[i], a)
			r.mu.Unlock()
		}
	}
	for i := range writers {
		r.writers = append(r.writers, &crashWriter{n: i, c: r.clients[i%instances], rng: rand.New(rand.NewPCG(seed, uint64(100+i))),
			tags: tags, acked: map[string]int{}})
	}
	return r
}

func (r *faultRig) startWriters() {
	r.stop = make(chan struct{})
	for _, w := range r.writers {
		r.wg.Go(func() { w.run(r.stop) })
	}
}

func (r *faultRig) stopWriters() {
	close(r.stop)
	r.wg.Wait()
}

// resources reads an instance's goroutines and open file descriptors, less
// its database connections (the pools open and close those as load
// comes and goes, within their bounds), from its metrics.
func (r *faultRig) resources(i int) (goroutines, fds, conns float64) {
	r.t.Helper()
	res, err := http.Get(r.servers[i].cur.Load().metrics + "/metrics")
	if err != nil {
		r.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		r.t.Fatal(err)
	}
	for line := range strings.Lines(string(raw)) {
		name, value, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		switch {
		case name == "go_goroutines":
			goroutines = v
		case name == "process_open_fds":
			fds = v
		case strings.HasPrefix(name, "pds_db_pool_open_connections{"):
			conns += v
		}
	}
	return goroutines, fds, conns
}

// quiet stops the writers' connections, so that what an instance holds is
// its own, and reads what each instance holds.
func (r *faultRig) quiet() (goroutines, fds []float64) {
	r.clients[0].http.CloseIdleConnections()
	// The worker keeps connections to the receiver open between attempts;
	// the receiver closes those idle for a moment (newCrashReceiver).
	time.Sleep(2 * crashReceiverIdle)
	for i := range r.servers {
		g, f, c := r.resources(i)
		goroutines, fds = append(goroutines, g), append(fds, f-c)
	}
	return goroutines, fds
}

// checkNothingLeft waits until every instance holds no more goroutines and
// file descriptors than it did before the faults, give or take a few.
func (r *faultRig) checkNothingLeft(goroutines, fds []float64) {
	r.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		g, f := r.quiet()
		var over []string
		var holders []int
		for i := range r.servers {
			if g[i] > goroutines[i]+8 || f[i] > fds[i]+4 {
				holders = append(holders, i)
				over = append(over, fmt.Sprintf("instance %d: %v goroutines and %v descriptors (besides database connections), %v and %v before the faults",
					i, g[i], f[i], goroutines[i], fds[i]))
			}
		}
		if len(over) == 0 {
			r.t.Logf("nothing left behind: goroutines %v (before %v), descriptors %v (before %v)", g, goroutines, f, fds)
			return
		}
		if time.Now().After(deadline) {
			r.t.Errorf("left behind after the faults:\n%s\nwhat holds them:\n%s", strings.Join(over, "\n"), r.stacks(holders))
			return
		}
	}
}

// stacks ends the instances with SIGQUIT, whose runtime then writes every
// goroutine's stack to the log, and returns what they wrote.
func (r *faultRig) stacks(instances []int) string {
	var b strings.Builder
	for _, i := range instances {
		srv := r.servers[i]
		before := len(srv.logs.String())
		proc := srv.cur.Load()
		_ = proc.cmd.Process.Signal(syscall.SIGQUIT)
		_ = proc.cmd.Wait()
		time.Sleep(100 * time.Millisecond) // the log reader's last lines
		fmt.Fprintf(&b, "instance %d:\n%s\n", i, srv.logs.String()[before:])
	}
	return b.String()
}

// faultReport is what the clients got during one fault.
type faultReport struct {
	succeeded, refused int
	causes             map[string]int
	longest            time.Duration
	slowest            string          // the longest answer's request and outcome
	recovered          []time.Duration // per instance, from the fault's end to its first success
}

// fault runs a fault while the writers write (begin, hold, end) and checks
// what every instance's clients got from its start until each instance
// wrote again. causes are the refusals the fault may give.
func (r *faultRig) fault(name string, begin, end func(), hold time.Duration, causes ...string) faultReport {
	r.t.Helper()
	began := time.Now()
	begin()
	time.Sleep(hold)
	end()
	ended := time.Now()
	rep := faultReport{causes: map[string]int{}}
	var wrong []string
	for i := range r.servers {
		first := r.firstSuccess(i, ended, ended.Add(30*time.Second))
		if first.IsZero() {
			r.t.Fatalf("%s: instance %d wrote nothing in 30s after the fault ended", name, i)
		}
		rep.recovered = append(rep.recovered, first.Sub(ended))
		r.mu.Lock()
		answers := r.answers[i]
		r.mu.Unlock()
		for _, a := range answers {
			if a.start.Before(began) || a.start.After(first) {
				continue
			}
			if a.took > rep.longest {
				rep.longest = a.took
				rep.slowest = fmt.Sprintf("instance %d, %s %s after %s: %d", i, a.method, a.path,
					a.start.Sub(began).Round(time.Millisecond), a.status)
			}
			switch problem := refusal(a, causes); {
			case a.err == nil && a.status/100 == 2:
				rep.succeeded++
			case problem == "":
				rep.refused++
				var p struct{ Cause string }
				_ = json.Unmarshal(a.body, &p)
				rep.causes[p.Cause]++
			default:
				wrong = append(wrong, fmt.Sprintf("instance %d, %s %s after %s: %s", i, a.method, a.path,
					a.start.Sub(began).Round(time.Millisecond), problem))
			}
		}
	}
	r.t.Logf("%s: %d writes succeeded and %d refused %v from its start until every instance wrote again; longest answer %s; wrote again %v after it ended",
		name, rep.succeeded, rep.refused, rep.causes, rep.longest.Round(time.Millisecond), rep.recovered)
	if len(wrong) > 0 {
		r.t.Errorf("%s: %d answers were neither a success nor a plain refusal; the first:\n%s", name, len(wrong),
			strings.Join(wrong[:min(10, len(wrong))], "\n"))
	}
	if rep.refused == 0 {
		r.t.Errorf("%s: no request was refused; the fault did not reach the clients", name)
	}
	if rep.longest > faultAnswerBound {
		r.t.Errorf("%s: an answer took %s, longer than %s (%s)", name, rep.longest, faultAnswerBound, rep.slowest)
	}
	for i, d := range rep.recovered {
		if d > faultRecoverBound {
			r.t.Errorf("%s: instance %d wrote again only %s after the fault ended, later than %s", name, i, d, faultRecoverBound)
		}
	}
	return rep
}

// firstSuccess is when the first write of instance i that succeeded after
// from was answered (zero when none was by until).
func (r *faultRig) firstSuccess(i int, from, until time.Time) time.Time {
	for time.Now().Before(until) {
		r.mu.Lock()
		var first time.Time
		for _, a := range r.answers[i] {
			if done := a.start.Add(a.took); a.err == nil && a.status/100 == 2 && done.After(from) && (first.IsZero() || done.Before(first)) {
				first = done
			}
		}
		r.mu.Unlock()
		if !first.IsZero() {
			return first
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Time{}
}

// refusal says what is wrong with a, as a plain refusal for one of causes
// ("" when nothing is): a 503 problem document with Retry-After in seconds
// and a cause.
func refusal(a answer, causes []string) string {
	if a.err != nil {
		return "no answer: " + a.err.Error()
	}
	if a.status != http.StatusServiceUnavailable {
		return fmt.Sprintf("%d %s", a.status, a.body)
	}
	if ct := a.header.Get("Content-Type"); ct != "application/problem+json" {
		return fmt.Sprintf("503 with Content-Type %q", ct)
	}
	if s, err := strconv.Atoi(a.header.Get("Retry-After")); err != nil || s <= 0 {
		return fmt.Sprintf("503 with Retry-After %q", a.header.Get("Retry-After"))
	}
	var p struct {
		Status int
		Title  string
		Cause  string
	}
	if err := json.Unmarshal(a.body, &p); err != nil || p.Status != 503 || p.Title == "" {
		return fmt.Sprintf("503 whose body is not its problem document: %s", a.body)
	}
	for _, c := range causes {
		if p.Cause == c {
			return ""
		}
	}
	return fmt.Sprintf("503 for cause %q, want one of %v", p.Cause, causes)
}

// finish stops the writers and checks that nothing acknowledged was lost
// and that every change was delivered, once.
func (r *faultRig) finish(began time.Time) {
	r.t.Helper()
	r.stopWriters()
	var people []*crashPerson
	var breadcrumbs []crashBreadcrumb
	acked := map[string]int{}
	for _, w := range r.writers {
		people = append(people, w.people...)
		breadcrumbs = append(breadcrumbs, w.breadcrumbs...)
		for k, n := range w.acked {
			acked[k] += n
		}
		if len(w.unexpected) > 0 {
			r.t.Errorf("writer %d got answers no write of this test should get; the first: %s", w.n, w.unexpected[0])
		}
	}
	r.t.Logf("acknowledged %v", acked)
	crashCheckStored(r.t, r.clients[0], people, breadcrumbs, began)
	crashCheckDelivered(r.t, r.rc, people)
	checkDeliveredOnce(r.t, r.rc)
}

// checkDeliveredOnce fails when the receiver took one delivery twice.
func checkDeliveredOnce(t *testing.T, rc *crashReceiver) {
	t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	seen := map[string]int{}
	for _, ds := range rc.byPerson {
		for _, d := range ds {
			seen[d.id]++
		}
	}
	var twice []string
	for id, n := range seen {
		if n > 1 {
			twice = append(twice, fmt.Sprintf("%s (%d times)", id, n))
		}
	}
	sort.Strings(twice)
	if len(twice) > 0 {
		t.Errorf("%d of %d deliveries were received more than once: %s", len(twice), len(seen), strings.Join(twice[:min(10, len(twice))], ", "))
	}
}

// checkOutagesLogged holds the outage log to its promise: each instance
// logs an outage once as it begins and once as it ends, however many
// requests it refused, and no request as an error.
func (r *faultRig) checkOutagesLogged(faults int) {
	r.t.Helper()
	began, ended := map[string]int{}, map[string]int{}
	for line := range strings.Lines(r.servers[0].logs.String()) {
		start, rest, _ := strings.Cut(line, "] ")
		var l struct{ Msg, Level string }
		if json.Unmarshal([]byte(rest), &l) != nil {
			continue
		}
		switch {
		case l.Msg == "database outage began":
			began[start]++
		case l.Msg == "database outage ended":
			ended[start]++
		case l.Msg == "request" && l.Level == "ERROR":
			r.t.Errorf("a request was logged as an error: %s", line)
		}
	}
	r.t.Logf("outages logged as begun %v, as ended %v", began, ended)
	for start, n := range began {
		// A fault may show as more than one cause (a stopped database is
		// unreachable; a request caught in its shutdown may time out).
		if n > 2*faults || ended[start] != n {
			r.t.Errorf("%s logged %d outages as begun and %d as ended over %d faults", start, n, ended[start], faults)
		}
	}
	if len(began) < len(r.servers) {
		r.t.Errorf("only %d of %d instances logged an outage", len(began), len(r.servers))
	}
}
