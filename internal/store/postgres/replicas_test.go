package postgres_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/clock"
	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/instance"
	"github.com/pds-dev/pds/internal/pgcluster"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/store/postgres"
	"github.com/pds-dev/pds/internal/store/storetest"
	"github.com/pds-dev/pds/internal/testenv"
)

// TestReadsFromReplicas runs a primary and two asynchronous standbys of its
// own (pg_basebackup -R, internal/pgcluster) and two stores on the primary,
// each with both standbys as replicas, as two instances of a fleet: a
// write through one is read through the other, never stale, whether the
// standbys are paused, lagging, caught up or stopped; caught up, they serve
// the reads; and the conformance suite's read groups pass with every read
// routed.
func TestReadsFromReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three PostgreSQL servers")
	}
	c := testenv.NewPGCluster(t, pgcluster.Options{Standbys: 2})
	nodes := c.Nodes()
	primary, paused, lagging := nodes[0], nodes[1], nodes[2]
	f := newFleet(t, c)

	t.Run("no stale read with replay paused on one standby and the other lagging", func(t *testing.T) {
		onStandby(t, paused, `SELECT pg_wal_replay_pause()`)
		if err := lagging.SetApplyDelay(30 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		before := f.reads()
		stale, errs := f.writeThenRead(t, 1000)
		t.Logf("1000 write-then-read pairs across two instances: %d stale, %d failed; reads %s", stale, errs, f.reads().since(before))
		if stale != 0 || errs != 0 {
			t.Fatalf("%d stale reads and %d failed of 1000", stale, errs)
		}
		// Through the API, as clients do: a PATCH through one instance, a
		// GET through the other, the key check's read giving the floor.
		stale, errs = f.throughTheAPI(t, 200)
		t.Logf("200 PATCH-then-GET pairs across two instances: %d stale, %d failed", stale, errs)
		if stale != 0 || errs != 0 {
			t.Fatalf("%d stale reads and %d failed of 200 through the API", stale, errs)
		}
		// The paused standby really is behind: a read there would have
		// been stale.
		name, err := paused.Query(`SELECT first_name FROM ` + f.schema + `.persons WHERE id = '` + f.person + `'`)
		if err != nil || strings.HasPrefix(name, "h") || name == "n999" {
			t.Fatalf("the paused standby reads first_name %q (%v): it was not behind", name, err)
		}
		onStandby(t, paused, `SELECT pg_wal_replay_resume()`)
		if err := lagging.SetApplyDelay(0); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("caught-up replicas serve at least 90% of the reads", func(t *testing.T) {
		waitCaughtUp(t, primary, paused, lagging)
		before := f.reads()
		stale, errs := f.readMostly(t, 500)
		got := f.reads().since(before)
		t.Logf("caught up: %s; %.1f%% served by replicas", got, 100*got.replicaShare())
		if stale != 0 || errs != 0 {
			t.Fatalf("%d stale reads and %d failed", stale, errs)
		}
		if got.replicaShare() < 0.9 {
			t.Fatalf("replicas served %.1f%% of the reads, want at least 90%%", 100*got.replicaShare())
		}
	})

	t.Run("a standby stopped mid-load costs no read an error", func(t *testing.T) {
		waitCaughtUp(t, primary, paused, lagging)
		before := f.reads()
		var errs, reads atomic.Int64
		ctx, stop := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ctx.Err() == nil; i++ {
					st := f.stores[(w+i)%2]
					if _, err := st.GetPerson(store.MayReadReplica(context.Background()), f.acc, f.person); err != nil {
						errs.Add(1)
						t.Errorf("get person: %v", err)
					}
					reads.Add(1)
				}
			}()
		}
		time.Sleep(300 * time.Millisecond)
		if err := lagging.Stop("immediate"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(700 * time.Millisecond)
		// Back, in a new life: its first connection is refused, its reads
		// go elsewhere until it has caught up.
		if err := lagging.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond)
		stop()
		wg.Wait()
		t.Logf("%d reads with a standby stopped and started again: %d failed; %s; replicas %+v", reads.Load(), errs.Load(),
			f.reads().since(before), f.replicas())
		if errs.Load() != 0 {
			t.Fatalf("%d reads failed", errs.Load())
		}
		// And it serves again once a probe finds it.
		deadline := time.Now().Add(5 * time.Second)
		for !f.allUp() {
			if time.Now().After(deadline) {
				t.Fatalf("the standby started again is not used within 5s: %+v", f.replicas())
			}
			time.Sleep(50 * time.Millisecond)
		}
	})

	t.Run("conformance reads with replicas", func(t *testing.T) {
		waitCaughtUp(t, primary, paused, lagging)
		var (
			mu     sync.Mutex
			opened []store.Store
		)
		t.Run("suite", func(t *testing.T) {
			storetest.RunReads(t, func(t testing.TB) store.Store {
				schema := newSchema(t, primary)
				st, err := postgres.OpenRoutingEveryRead(context.Background(), inSchema(t, primary, schema),
					postgres.Options{Replicas: []string{inSchema(t, paused, schema), inSchema(t, lagging, schema)}})
				if err != nil {
					t.Fatalf("open with replicas: %v", err)
				}
				t.Cleanup(func() { st.Close() })
				mu.Lock()
				opened = append(opened, st)
				mu.Unlock()
				return st
			})
		})
		var sum readCounts
		for _, st := range opened {
			sum = sum.plus(statsOf(st))
		}
		t.Logf("conformance reads: %s", sum)
		if sum.replica == 0 {
			t.Fatal("no read of the conformance suite went to a replica")
		}
	})
}

// fleet is two stores on one primary, each with the standbys as replicas,
// and an account with a key and a person.
type fleet struct {
	stores      [2]store.Store
	schema      string
	acc, person string
	keyHash     []byte
}

func newFleet(t *testing.T, c *pgcluster.Cluster) *fleet {
	nodes := c.Nodes()
	f := &fleet{schema: newSchema(t, nodes[0])}
	var replicas []string
	for _, n := range nodes[1:] {
		replicas = append(replicas, inSchema(t, n, f.schema))
	}
	for i := range f.stores {
		st, err := postgres.Open(context.Background(), inSchema(t, nodes[0], f.schema), postgres.Options{Replicas: replicas})
		if err != nil {
			t.Fatalf("open with replicas: %v", err)
		}
		t.Cleanup(func() { st.Close() })
		f.stores[i] = st
	}
	ctx := context.Background()
	st := f.stores[0]
	f.acc = storetest.NewAccount(t, st)
	secret := domain.RandomHex(16)
	sum := sha256.Sum256([]byte(secret))
	f.keyHash = sum[:]
	if err := st.CreateKey(ctx, domain.APIKey{ID: domain.NewID("key"), AccountID: f.acc, Prefix: "pds_" + secret[:8],
		LastFour: secret[len(secret)-4:], Hash: f.keyHash, Scopes: []domain.Scope{domain.ScopePersonsRead}, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	p, _, err := st.UpsertPerson(ctx, f.acc, domain.PersonUpsert{ExternalID: text("p"), FirstName: text("start")}, f.write())
	if err != nil {
		t.Fatal(err)
	}
	f.person = p.ID
	waitCaughtUp(t, nodes[0], nodes[1:]...)
	return f
}

func text(s string) domain.Opt[string] { return domain.Opt[string]{Set: true, Value: s} }

func (f *fleet) write() store.Write { return store.Write{Now: time.Now(), Window: time.Minute} }

// writeThenRead writes the person's first name through one instance and
// reads it through the other, n times, in turn by Get Person after the key
// check (whose read gives the floor), by Get Person alone and by the
// lookup by external id; it counts the reads that missed the write, and
// the calls that failed.
func (f *fleet) writeThenRead(t *testing.T, n int) (stale, failed int) {
	for i := range n {
		want := fmt.Sprint("n", i)
		w, r := f.stores[i%2], f.stores[(i+1)%2]
		if _, _, err := w.UpsertPerson(context.Background(), f.acc, domain.PersonUpsert{ExternalID: text("p"), FirstName: text(want)}, f.write()); err != nil {
			t.Errorf("write %d: %v", i, err)
			failed++
			continue
		}
		got, err := f.read(r, i)
		switch {
		case err != nil:
			t.Errorf("read %d: %v", i, err)
			failed++
		case got != want:
			stale++
		}
	}
	return stale, failed
}

// throughTheAPI is writeThenRead through each store's API (instance.New),
// a PATCH of the person's first name then a GET.
func (f *fleet) throughTheAPI(t *testing.T, n int) (stale, failed int) {
	_, secret, err := service.MintKey(context.Background(), f.stores[0], service.KeyRequest{AccountID: f.acc, Scopes: domain.AllScopes}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var servers [2]*httptest.Server
	for i, st := range f.stores {
		servers[i] = httptest.NewServer(instance.New(instance.Parts{Store: st, Clock: clock.System{}}).Handler())
		defer servers[i].Close()
	}
	call := func(srv *httptest.Server, method, body string) (int, []byte, error) {
		req, err := http.NewRequest(method, srv.URL+"/persons/"+f.person, strings.NewReader(body))
		if err != nil {
			return 0, nil, err
		}
		req.Header.Set("Authorization", "Bearer "+secret)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := srv.Client().Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer res.Body.Close()
		raw, err := io.ReadAll(res.Body)
		return res.StatusCode, raw, err
	}
	for i := range n {
		want := fmt.Sprint("h", i)
		if code, raw, err := call(servers[i%2], http.MethodPatch, `{"first_name":"`+want+`"}`); err != nil || code != http.StatusOK {
			t.Errorf("PATCH %d: %d %s %v", i, code, raw, err)
			failed++
			continue
		}
		code, raw, err := call(servers[(i+1)%2], http.MethodGet, "")
		var got struct {
			FirstName string `json:"first_name"`
		}
		if err == nil && code == http.StatusOK {
			err = json.Unmarshal(raw, &got)
		}
		switch {
		case err != nil || code != http.StatusOK:
			t.Errorf("GET %d: %d %s %v", i, code, raw, err)
			failed++
		case got.FirstName != want:
			stale++
		}
	}
	return stale, failed
}

// read reads the person's first name as a request would, the i-th way.
func (f *fleet) read(st store.Store, i int) (string, error) {
	ctx := store.MayReadReplica(context.Background())
	var p *domain.Person
	switch i % 3 {
	case 0:
		if _, err := st.KeyByHash(ctx, f.keyHash); err != nil {
			return "", err
		}
		fallthrough
	case 1:
		var err error
		if p, err = st.GetPerson(ctx, f.acc, f.person); err != nil {
			return "", err
		}
	default:
		found, _, err := st.ListPersons(ctx, f.acc, domain.PersonSelection{Mode: domain.PersonByExternalID, Key: "p"},
			domain.PageRequest{Page: 1, Size: 1})
		if err != nil {
			return "", err
		}
		if len(found) != 1 {
			return "", nil
		}
		p = &found[0]
	}
	if p.FirstName == nil {
		return "", nil
	}
	return *p.FirstName, nil
}

// readMostly is writeThenRead with a write before every tenth read only.
func (f *fleet) readMostly(t *testing.T, n int) (stale, failed int) {
	want := "start"
	for i := range n {
		if i%10 == 0 {
			want = fmt.Sprint("m", i)
			if _, _, err := f.stores[i%2].UpsertPerson(context.Background(), f.acc,
				domain.PersonUpsert{ExternalID: text("p"), FirstName: text(want)}, f.write()); err != nil {
				t.Errorf("write %d: %v", i, err)
				failed++
				continue
			}
		}
		got, err := f.read(f.stores[(i+1)%2], i)
		switch {
		case err != nil:
			t.Errorf("read %d: %v", i, err)
			failed++
		case got != want:
			stale++
		}
	}
	return stale, failed
}

// readCounts are the routed reads of stores, by target, and why.
type readCounts struct {
	replica, primary, fallback uint64
	reasons                    map[string]uint64
}

func (f *fleet) reads() readCounts {
	var sum readCounts
	for _, st := range f.stores {
		sum = sum.plus(statsOf(st))
	}
	return sum
}

// replicas is each store's view of its replicas.
func (f *fleet) replicas() [][]store.ReplicaState {
	var out [][]store.ReplicaState
	for _, st := range f.stores {
		stats, _ := st.(interface {
			ReplicaStats() (store.ReplicaStats, bool)
		}).ReplicaStats()
		out = append(out, stats.Replicas)
	}
	return out
}

// allUp says whether every store finds every replica up.
func (f *fleet) allUp() bool {
	for _, rs := range f.replicas() {
		for _, r := range rs {
			if !r.Up {
				return false
			}
		}
	}
	return true
}

func statsOf(st store.Store) readCounts {
	var c readCounts
	stats, _ := st.(interface {
		ReplicaStats() (store.ReplicaStats, bool)
	}).ReplicaStats()
	c.reasons = map[string]uint64{}
	for _, r := range stats.Reads {
		c.reasons[r.Target+"/"+r.Reason] += r.N
		switch r.Target {
		case "replica":
			c.replica += r.N
		case "primary":
			c.primary += r.N
		case "fallback":
			c.fallback += r.N
		}
	}
	return c
}

func (c readCounts) plus(o readCounts) readCounts {
	sum := readCounts{c.replica + o.replica, c.primary + o.primary, c.fallback + o.fallback, map[string]uint64{}}
	for k, n := range c.reasons {
		sum.reasons[k] += n
	}
	for k, n := range o.reasons {
		sum.reasons[k] += n
	}
	return sum
}

func (c readCounts) since(o readCounts) readCounts {
	d := readCounts{c.replica - o.replica, c.primary - o.primary, c.fallback - o.fallback, map[string]uint64{}}
	for k, n := range c.reasons {
		if n > o.reasons[k] {
			d.reasons[k] = n - o.reasons[k]
		}
	}
	return d
}

func (c readCounts) replicaShare() float64 {
	all := c.replica + c.primary + c.fallback
	if all == 0 {
		return 0
	}
	return float64(c.replica) / float64(all)
}

func (c readCounts) String() string {
	return fmt.Sprintf("%d by replicas, %d by the primary, %d fallen back to the primary %v", c.replica, c.primary, c.fallback, c.reasons)
}

// onStandby runs statement on standby n, again when replay cancelled it
// for a conflict with recovery (40001), as it may any statement there.
func onStandby(t testing.TB, n *pgcluster.Node, statement string) {
	t.Helper()
	var err error
	for range 20 {
		if err = n.Exec(statement); err == nil || !strings.Contains(err.Error(), "40001") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// newSchema makes a schema of its own on the cluster's primary.
func newSchema(t testing.TB, primary *pgcluster.Node) string {
	t.Helper()
	schema := "t_" + domain.RandomHex(8)
	if err := primary.Exec(`CREATE SCHEMA ` + schema); err != nil {
		t.Fatal(err)
	}
	return schema
}

// inSchema is node n's URL with schema first on the search path.
func inSchema(t testing.TB, n *pgcluster.Node, schema string) string {
	t.Helper()
	u, err := postgres.WithSetting(n.URL("postgres"), "search_path", schema)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// waitCaughtUp waits until every standby has replayed what the primary
// wrote so far.
func waitCaughtUp(t testing.TB, primary *pgcluster.Node, standbys ...*pgcluster.Node) {
	t.Helper()
	at, err := primary.Query(`SELECT pg_current_wal_insert_lsn()::text`)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, n := range standbys {
		for {
			ok, err := n.Query(`SELECT pg_last_wal_replay_lsn() >= '` + at + `'::pg_lsn`)
			if err == nil && ok == "t" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("standby %s has not replayed %s within 30s (%q, %v)", n.Name, at, ok, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}
