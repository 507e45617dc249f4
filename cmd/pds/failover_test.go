package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pds-dev/pds/internal/pgcluster"
	"github.com/pds-dev/pds/internal/testenv"
)

// The failover tests run the real binary on a primary and a standby of the
// test's own (testenv.NewPGCluster), through the URL failover managers
// print (both hosts, target_session_attrs=read-write), while the
// synchronous standby stops, the primary is killed and the standby
// promoted, the old primary comes back on its own, or the first host
// hangs. Each waits on conditions (so many writes answered), with one
// generous bound, failoverWait.

// failoverWait bounds every wait of the failover tests for a condition.
const failoverWait = time.Minute

// failoverDeadline is the instances' --database-timeout: short, so that a
// write that waits for a standby answers within the test's patience.
const failoverDeadline = time.Second

// TestFailoverSyncStandbyOutage: with the synchronous standby stopped, no
// write is acknowledged (each is refused at its deadline with
// database_timeout: its commit was cancelled before the standby had it),
// writes that change nothing included; once the standby streams again,
// writes succeed; and after the standby stops again, the primary is killed
// and the standby promoted, every write that was acknowledged reads back.
func TestFailoverSyncStandbyOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("the failover tests take a minute; skipped with -short")
	}
	t.Parallel()
	cluster := testenv.NewPGCluster(t, pgcluster.Options{Synchronous: true})
	bin := buildPDS(t)
	began := time.Now()
	rig := newFaultRigOf(t, bin, cluster.URL("postgres"), 2, faultWriters, "--database-timeout", failoverDeadline.String())
	rig.startWriters()
	rig.waitAnswered(time.Now(), 20, succeeded)
	repeats := newRepeater(t, rig)
	primary := cluster.Primary()
	standby := cluster.Other(primary)

	outage := func(name string) {
		if err := standby.Stop("fast"); err != nil {
			t.Fatal(err)
		}
		from := time.Now()
		stopRepeats := repeats.start()
		rig.waitAnswered(from, 32, func(a answer) bool { return true })
		stopRepeats()
		answers := rig.answersStarted(from, time.Now())
		acked, wrong := 0, []string{}
		for _, a := range answers {
			if a.err == nil && a.status/100 == 2 {
				acked++
				wrong = append(wrong, fmt.Sprintf("%s %s: %d after %s", a.method, a.path, a.status, a.took.Round(time.Millisecond)))
			} else if problem := refusal(a, []string{"database_timeout"}); problem != "" {
				wrong = append(wrong, fmt.Sprintf("%s %s: %s", a.method, a.path, problem))
			}
		}
		t.Logf("%s outage of the synchronous standby: %d of %d writes acknowledged (%d of them writes that change nothing)",
			name, acked, len(answers), repeats.acked())
		if len(wrong) > 0 {
			t.Errorf("%s outage: %d of %d answers were not a database_timeout refusal; the first:\n%s", name, len(wrong),
				len(answers), strings.Join(wrong[:min(10, len(wrong))], "\n"))
		}
	}

	outage("first")
	if err := standby.Start(); err != nil {
		t.Fatal(err)
	}
	if err := cluster.WaitStreaming(standby); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	rig.waitEveryInstanceWrote(back)
	t.Logf("writes succeed again %v after the standby streamed", rig.firstSuccesses(back))

	// The standby stops again; then the primary dies and the standby, which
	// never saw what the primary took meanwhile, is promoted: whatever was
	// acknowledged must be there.
	outage("second")
	if err := primary.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := standby.Start(); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Promote(standby); err != nil {
		t.Fatal(err)
	}
	promoted := time.Now()
	rig.waitEveryInstanceWrote(promoted)
	t.Logf("first writes %v after the promotion", rig.firstSuccesses(promoted))
	rig.waitAnswered(time.Now(), 20, succeeded)
	rig.finish(began)
}

// TestFailoverUnderLoad: two instances, sixteen writers and an HTTPS
// receiver while the primary is killed and the synchronous standby
// promoted, three times, the old primary rewound and re-joined as the
// standby each time: during each switch every answer is a success or a
// plain refusal, each instance writes again within faultRecoverBound of the
// promotion, and at the end every acknowledged write reads back and every
// change was delivered once.
func TestFailoverUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("the failover tests take a minute; skipped with -short")
	}
	t.Parallel()
	cluster := testenv.NewPGCluster(t, pgcluster.Options{Synchronous: true})
	bin := buildPDS(t)
	began := time.Now()
	rig := newFaultRigOf(t, bin, cluster.URL("postgres"), 2, crashWriters, "--database-timeout", (2 * failoverDeadline).String())
	rig.startWriters()
	rig.waitAnswered(time.Now(), 50, succeeded)
	for round := 1; round <= 3; round++ {
		old := cluster.Primary()
		next := cluster.Other(old)
		rig.fault(fmt.Sprintf("failover %d (%s to %s)", round, old.Name, next.Name),
			func() {
				if err := old.Kill(); err != nil {
					t.Fatal(err)
				}
			},
			func() {
				if err := cluster.Promote(next); err != nil {
					t.Fatal(err)
				}
			}, 0, "database_unreachable", "database_timeout")
		if err := cluster.Rejoin(old); err != nil {
			t.Fatal(err)
		}
		rig.waitAnswered(time.Now(), 50, succeeded)
	}
	rig.finish(began)
}

// TestFailoverOldPrimaryAlone: after a promotion, the old primary is
// started again on its own, read-write on its old timeline, first in the
// URL. pds writes nothing to it and goes on writing to the new primary.
func TestFailoverOldPrimaryAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("the failover tests take a minute; skipped with -short")
	}
	t.Parallel()
	cluster := testenv.NewPGCluster(t, pgcluster.Options{Synchronous: true})
	bin := buildPDS(t)
	began := time.Now()
	rig := newFaultRigOf(t, bin, cluster.URL("postgres"), 2, faultWriters, "--database-timeout", (2 * failoverDeadline).String())
	rig.startWriters()
	rig.waitAnswered(time.Now(), 20, succeeded)
	old := cluster.Primary()
	next := cluster.Other(old)
	if err := old.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Promote(next); err != nil {
		t.Fatal(err)
	}
	rig.waitAnswered(time.Now(), 20, succeeded)
	if err := old.StartAlone(); err != nil {
		t.Fatal(err)
	}
	before := rowsOn(t, old)
	restarted := time.Now()
	// The instances open connections while it runs: one restarted, the
	// other under more writers than its pool holds connections for now.
	rig.restart(rig.servers[1])
	rig.addWriters(rig.clients[0], crashWriters)
	rig.waitAnswered(restarted, 200, succeeded)
	after := rowsOn(t, old)
	t.Logf("rows on the old primary, started alone: %d, and %d after 200 writes were acknowledged", before, after)
	if after != before {
		t.Errorf("pds wrote %d rows to the old primary, on its old timeline, after it started alone", after-before)
	}
	rig.finish(began)
}

// TestFailoverHungHost: the first host of the URL, a standby since a
// failover, hangs (SIGSTOP) as the instances start and open their
// connections: every request is still answered, by the primary, within
// its deadline.
func TestFailoverHungHost(t *testing.T) {
	if testing.Short() {
		t.Skip("the failover tests take a minute; skipped with -short")
	}
	t.Parallel()
	cluster := testenv.NewPGCluster(t, pgcluster.Options{})
	first := cluster.Nodes()[0]
	if err := first.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Promote(cluster.Other(first)); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Rejoin(first); err != nil {
		t.Fatal(err)
	}
	bin := buildPDS(t)
	began := time.Now()
	rig := newFaultRigOf(t, bin, cluster.URL("postgres"), 2, faultWriters)
	rig.startWriters()
	rig.waitAnswered(time.Now(), 20, succeeded)

	first.Freeze()
	defer first.Thaw()
	// Restarted, each instance needs every connection anew.
	since := make([]time.Time, len(rig.servers))
	took := make([]time.Duration, len(rig.servers))
	for i, s := range rig.servers {
		since[i], took[i] = rig.restart(s)
	}
	var answers []answer
	deadline := time.Now().Add(failoverWait)
	for len(answers) < 200 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d answers within %s", len(answers), failoverWait)
		}
		time.Sleep(20 * time.Millisecond)
		answers = answers[:0]
		for i := range rig.servers {
			answers = append(answers, rig.answersOf(i, since[i], time.Now())...)
		}
	}
	var slow []string
	longest := time.Duration(0)
	for _, a := range answers {
		longest = max(longest, a.took)
		if a.err != nil || a.status/100 != 2 {
			slow = append(slow, fmt.Sprintf("%s %s after %s: %d %v %.120s", a.method, a.path, a.took.Round(time.Millisecond), a.status, a.err, a.body))
		}
	}
	t.Logf("with the first host hung: instances serving %v after their restart; %d of %d requests not answered with a success; longest answer %s",
		took, len(slow), len(answers), longest.Round(time.Millisecond))
	if len(slow) > 0 {
		t.Errorf("%d of %d requests failed while the first host hung; the first:\n%s", len(slow), len(answers),
			strings.Join(slow[:min(10, len(slow))], "\n"))
	}
	first.Thaw()
	rig.finish(began)
}

// addWriters stops the writers, adds n more on client c and starts them
// all again.
func (r *faultRig) addWriters(c *crashClient, n int) {
	r.stopWriters()
	first := r.writers[0]
	for i := len(r.writers); n > 0; i, n = i+1, n-1 {
		r.writers = append(r.writers, &crashWriter{n: i, c: c, rng: rand.New(rand.NewPCG(first.rng.Uint64(), uint64(100+i))),
			tags: first.tags, acked: map[string]int{}})
	}
	r.startWriters()
}

// succeeded holds for an acknowledged write.
func succeeded(a answer) bool { return a.err == nil && a.status/100 == 2 }

// waitAnswered waits, at most failoverWait, until the clients got n
// answers that match ok to requests sent at or after from.
func (r *faultRig) waitAnswered(from time.Time, n int, ok func(answer) bool) {
	r.t.Helper()
	deadline := time.Now().Add(failoverWait)
	for {
		got := 0
		for _, a := range r.answersStarted(from, time.Now()) {
			if ok(a) {
				got++
			}
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("only %d of %d answers wanted within %s", got, n, failoverWait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// answersStarted are the answers, of every instance, to requests sent in
// [from, to) and answered by to.
func (r *faultRig) answersStarted(from, to time.Time) []answer {
	var out []answer
	for i := range r.servers {
		out = append(out, r.answersOf(i, from, to)...)
	}
	return out
}

// answersOf is answersStarted of instance i alone.
func (r *faultRig) answersOf(i int, from, to time.Time) []answer {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []answer
	for _, a := range r.answers[i] {
		if !a.start.Before(from) && a.start.Before(to) && !a.start.Add(a.took).After(to) {
			out = append(out, a)
		}
	}
	return out
}

// restart stops s's process as Ctrl-C does (SIGINT: no drain; the
// deliveries it claimed handed back, so none is sent twice) and starts
// another, and returns when its clients reach the new one, and how long
// the new one took to serve.
func (r *faultRig) restart(s *crashServer) (time.Time, time.Duration) {
	r.t.Helper()
	proc := s.cur.Load()
	if err := proc.cmd.Process.Signal(syscall.SIGINT); err != nil {
		r.t.Fatal(err)
	}
	_ = proc.cmd.Wait()
	began := time.Now()
	s.start(r.t)
	return time.Now(), time.Since(began).Round(time.Millisecond)
}

// waitEveryInstanceWrote waits, at most failoverWait, until every instance
// acknowledged a write after from.
func (r *faultRig) waitEveryInstanceWrote(from time.Time) {
	r.t.Helper()
	for i := range r.servers {
		if r.firstSuccess(i, from, time.Now().Add(failoverWait)).IsZero() {
			r.t.Fatalf("instance %d wrote nothing within %s", i, failoverWait)
		}
	}
}

// firstSuccesses is, per instance, the time from from to its first
// acknowledged write after it.
func (r *faultRig) firstSuccesses(from time.Time) []time.Duration {
	var out []time.Duration
	for i := range r.servers {
		out = append(out, r.firstSuccess(i, from, time.Now().Add(failoverWait)).Sub(from).Round(time.Millisecond))
	}
	return out
}

// rowsOn counts the persons, breadcrumbs and tag links node n holds.
func rowsOn(t *testing.T, n *pgcluster.Node) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), failoverWait)
	defer cancel()
	conn, err := pgconn.Connect(ctx, n.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	res, err := conn.Exec(ctx, `SELECT (SELECT count(*) FROM persons) + (SELECT count(*) FROM breadcrumbs) + (SELECT count(*) FROM person_tags)`).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var rows int
	if _, err := fmt.Sscan(string(res[0].Rows[0][0]), &rows); err != nil {
		t.Fatal(err)
	}
	return rows
}

// repeater sends writes that change nothing: an upsert of what the person
// holds, a breadcrumb replayed under its Idempotency-Key, an attach of a
// tag the person holds, a detach of one it does not.
type repeater struct {
	t        *testing.T
	c        *crashClient
	person   string
	upsert   map[string]any
	crumb    map[string]any
	tag, not string
	nAcked   int
}

// newRepeater makes, through the first instance, what the repeater's
// writes repeat.
func newRepeater(t *testing.T, r *faultRig) *repeater {
	c := r.clients[0]
	var tags []struct{ ID string }
	for i := range 2 {
		var tag struct{ ID string }
		c.must(t, "POST", "/tags", map[string]any{"name": fmt.Sprintf("repeat-%d", i), "context": "person"}, 201, &tag)
		tags = append(tags, tag)
	}
	rp := &repeater{t: t, c: c, upsert: map[string]any{"external_id": "repeat-1", "first_name": "Same"},
		tag: tags[0].ID, not: tags[1].ID}
	var p struct{ ID string }
	c.must(t, "POST", "/persons", rp.upsert, 201, &p)
	rp.person = p.ID
	rp.crumb = map[string]any{"flavor": "page_view", "person_id": p.ID}
	if status, raw, err := c.do("POST", "/breadcrumbs", rp.crumb, map[string]string{"Idempotency-Key": "repeat-1"}); err != nil || status != 201 {
		t.Fatalf("breadcrumb to repeat: %d %s %v", status, raw, err)
	}
	c.must(t, "POST", "/persons/"+p.ID+"/tags", map[string]any{"tag_ids": []string{rp.tag}}, 200, nil)
	return rp
}

// start sends the repeated writes one after the other until the returned
// function is called, which waits for the last.
func (rp *repeater) start() (stop func()) {
	rp.nAcked = 0
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			var status int
			var err error
			switch i % 4 {
			case 0:
				status, _, err = rp.c.do("POST", "/persons", rp.upsert, nil)
			case 1:
				status, _, err = rp.c.do("POST", "/breadcrumbs", rp.crumb, map[string]string{"Idempotency-Key": "repeat-1"})
			case 2:
				status, _, err = rp.c.do("POST", "/persons/"+rp.person+"/tags", map[string]any{"tag_ids": []string{rp.tag}}, nil)
			case 3:
				status, _, err = rp.c.do("DELETE", "/persons/"+rp.person+"/tags/"+rp.not, nil, nil)
			}
			if err == nil && status/100 == 2 {
				rp.nAcked++
			}
		}
	}()
	return func() { close(done); <-finished }
}

// acked is how many repeated writes were acknowledged since the last
// start (read once its stop returned).
func (rp *repeater) acked() int { return rp.nAcked }
