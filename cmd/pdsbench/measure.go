package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pds-dev/pds/internal/store"
)

// pageSize is the List size the rows ask for.
const pageSize = 25

// measure runs the rows of one engine against its server.
type measure struct {
	ctx    context.Context
	c      config
	engine string
	fx     fixture
	base   string
	logf   func(string, ...any)
	// pds is the pds serve process at base, whose CPU time and memory
	// rows read.
	pds *process
	// dir is the run's directory, for the logs of the processes a row
	// starts.
	dir      string
	rows     []row
	failures []string
	// database is what the server serves, for what a row sets up outside
	// the API (setup) or runs pds on.
	database string
}

// setup runs f on a store of the server's database, for what a row sets
// up outside the API (an account, a key), as pds's own commands do beside
// a running server. The store is closed before the rows go on: left open,
// it would work in the background (SQLite's checkpointer, the fold) while
// they measure.
func (m *measure) setup(f func(store.Store) error) error {
	st, err := open(m.ctx, m.database)
	if err != nil {
		return err
	}
	return errors.Join(f(st), st.Close())
}

// stopCeiling stops a ceiling a row started, failing the run if it did
// not stop cleanly.
func (m *measure) stopCeiling(p *process) {
	if err := p.stop(); err != nil {
		m.fail("%v", err)
	}
}

// rowGroups are the groups of rows --rows picks from. A file of rows adds
// its group from init.
var rowGroups = map[string]func(*measure){"scale": (*measure).scaleRows}

// The groups that need no seed, each on a database of its own: the webhook
// worker (delivery.go) and the comparison with a peer (peer.go).
const (
	deliveryGroup = "delivery"
	peerGroup     = "peer"
)

// unseeded says whether group runs without the seed.
func unseeded(group string) bool { return group == deliveryGroup || group == peerGroup }

func rowGroupNames() []string {
	return slices.Sorted(slices.Values(append(slices.Collect(maps.Keys(rowGroups)), deliveryGroup, peerGroup)))
}

// seeded says whether a group of --rows measures the seeded account.
func (c config) seeded() bool {
	return slices.ContainsFunc(c.rows, func(g string) bool { return !unseeded(g) })
}

// parseRows reads --rows: a comma list of known groups, each once.
func parseRows(v string) ([]string, error) {
	var out []string
	for name := range strings.SplitSeq(v, ",") {
		name = strings.TrimSpace(name)
		if _, ok := rowGroups[name]; !ok && !unseeded(name) {
			return nil, fmt.Errorf("--rows: unknown group %q; the groups are %s", name, strings.Join(rowGroupNames(), ", "))
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out, nil
}

func (m *measure) all() {
	m.warmUp()
	// The import's row adds persons that the exact totals of the other
	// rows do not count: it comes last but for the erasures and then the
	// merges, which take away seeded persons the other rows pick.
	groups := slices.Clone(m.c.rows)
	late := func(g string) int {
		return boolOrder(g == importGroup) + 2*boolOrder(g == erasureGroup) + 3*boolOrder(g == mergeGroup)
	}
	slices.SortStableFunc(groups, func(a, b string) int { return late(a) - late(b) })
	for _, group := range groups {
		if run, ok := rowGroups[group]; ok {
			run(m)
		}
	}
	slices.SortStableFunc(m.rows, func(a, b row) int { return rowNumber(a.name) - rowNumber(b.name) })
}

// rowNumber is the number a row's name starts with ("14. ..." is 14).
func rowNumber(name string) int {
	n, _ := strconv.Atoi(name[:strings.IndexByte(name, '.')])
	return n
}

func boolOrder(b bool) int {
	if b {
		return 1
	}
	return 0
}

// scaleRows are the rows of the service at scale: lists, lookups, reads
// and single writes.
func (m *measure) scaleRows() {
	// Reads first, while the totals are exactly what the seed made.
	for _, r := range []struct {
		number string
		run    func()
	}{
		{"3", m.windowPages}, {"4", m.twoTags}, {"5", m.lookupByEmail}, {"6", m.getPersonRatio}, {"8", m.breadcrumbPages},
		{"14", m.changeFeed},
		{"1", m.upserts}, {"2", m.sustainedUpserts}, {"8", m.appendBreadcrumbs}, {"8", m.appendsRatio},
	} {
		if m.c.only == nil || m.c.only[r.number] {
			r.run()
		}
	}
}

func (m *measure) fail(format string, a ...any) {
	m.failures = append(m.failures, m.engine+": "+fmt.Sprintf(format, a...))
}

// sequential runs one latency row: up to c.requests requests one after
// another on one connection (or c.duration, whichever ends first).
func (m *measure) sequential(name, note string, next func(i int) request, check func(int, []byte) error) result {
	return m.loadRow(name, note, 1, m.c.requests, m.c.duration, next, check)
}

func (m *measure) loadRow(name, note string, conns, count int, d time.Duration, next func(i int) request, check func(int, []byte) error) result {
	m.logf("%s", name)
	res := load{client: newClient(conns), base: m.base, key: m.fx.key, conns: conns, count: count, timeout: d,
		next: next, check: check}.run(m.ctx)
	if res.errors > 0 {
		m.fail("%s: %d of %d requests failed; first: %v", name, res.errors, res.errors+res.n(), res.firstErr)
		note = strings.TrimSpace(note + fmt.Sprintf(" **%d failed**", res.errors))
	}
	m.rows = append(m.rows, row{engine: m.engine, name: name, n: res.n(), p50: res.p50(), p99: res.p99(),
		throughput: fmt.Sprintf("%.0f req/s", res.perSecond()), note: note})
	return res
}

func get(path string) func(int) request {
	return func(int) request { return request{method: http.MethodGet, path: path, want: http.StatusOK} }
}

// page is a List response.
type page struct {
	Items []json.RawMessage `json:"items"`
	Total int               `json:"total"`
}

// wantPage checks a List answer: the exact total, and the items a page of
// that number holds.
func wantPage(total, number int) func(int, []byte) error {
	return func(_ int, b []byte) error {
		var p page
		if err := json.Unmarshal(b, &p); err != nil {
			return err
		}
		items := min(pageSize, max(0, total-(number-1)*pageSize))
		if p.Total != total || len(p.Items) != items {
			return fmt.Errorf("total %d with %d items, want total %d with %d items", p.Total, len(p.Items), total, items)
		}
		return nil
	}
}

func (m *measure) warmUp() {
	m.logf("warming up")
	since := m.windowQuery()
	for _, path := range []string{"/persons/" + m.fx.samplePerson[0], "/persons?" + since, "/persons?email=" + url.QueryEscape(seedEmail(1)),
		"/breadcrumbs?size=25"} {
		res := load{client: newClient(1), base: m.base, key: m.fx.key, conns: 1, count: 100, timeout: m.c.duration, next: get(path)}.run(m.ctx)
		if res.errors > 0 {
			m.fail("warm-up %s: %v", path, res.firstErr)
		}
	}
}

func (m *measure) windowQuery() string {
	return "updated_since=" + url.QueryEscape(m.fx.since.Format("2006-01-02T15:04:05Z")) + "&size=" + strconv.Itoa(pageSize)
}

// pagesOf lists the pages a deep-paging row asks for: 1, 400, 4000 and the
// last, those that exist, and says which it skipped.
func pagesOf(total int, deep ...int) ([]int, []string) {
	last := max(1, (total+pageSize-1)/pageSize)
	pages := []int{1}
	var skipped []string
	for _, p := range deep {
		if p < last {
			pages = append(pages, p)
		} else if p > last {
			skipped = append(skipped, fmt.Sprintf("page %d does not exist (last is %d)", p, last))
		}
	}
	if last > 1 {
		pages = append(pages, last)
	}
	return pages, skipped
}

func pageName(p, total int) string {
	if last := (total + pageSize - 1) / pageSize; p == last && p > 1 {
		return fmt.Sprintf("last page (%d)", p)
	}
	return fmt.Sprintf("page %d", p)
}

func (m *measure) windowPages() {
	total := m.fx.persons
	pages, skipped := pagesOf(total, 400, 4000)
	for _, p := range pages {
		note := fmt.Sprintf("total %d, exact", total)
		if p == 1 && len(skipped) > 0 {
			note += "; " + strings.Join(skipped, "; ")
		}
		m.sequential("3. List Persons, window mode, size 25, "+pageName(p, total), note,
			get("/persons?"+m.windowQuery()+"&page="+strconv.Itoa(p)), wantPage(total, p))
	}
}

func (m *measure) twoTags() {
	total := (m.fx.seeded + 14) / 15 // holding A (i%3 == 0) and B (i%5 == 0)
	m.sequential("4. List Persons, window mode, tag_ids A and B, page 1", fmt.Sprintf("total %d, exact", total),
		get("/persons?"+m.windowQuery()+"&tag_ids="+m.fx.tagA+"&tag_ids="+m.fx.tagB), wantPage(total, 1))
}

func (m *measure) lookupByEmail() {
	rng := rand.New(rand.NewPCG(5, 5))
	picks := make([]int, m.c.requests)
	for i := range picks {
		picks[i] = rng.IntN(m.fx.seeded)
	}
	m.sequential("5. List Persons, lookup by email", "a random seeded person each time",
		func(i int) request {
			return request{method: http.MethodGet, path: "/persons?email=" + url.QueryEscape(strings.ToUpper(seedEmail(picks[i%len(picks)]))), want: http.StatusOK}
		},
		func(i int, b []byte) error {
			var p struct {
				Items []struct {
					ExternalID string `json:"external_id"`
				} `json:"items"`
			}
			if err := json.Unmarshal(b, &p); err != nil {
				return err
			}
			if want := seedExternalID(picks[i%len(picks)]); len(p.Items) != 1 || p.Items[0].ExternalID != want {
				return fmt.Errorf("found %+v, want %s", p.Items, want)
			}
			return nil
		})
}

// ratioRounds is how many times row 6 takes turns between the service and
// the bare handler: the machine's speed drifts (other work on it), so each
// ratio compares two slices measured side by side, and the row reports the
// median of those ratios.
const ratioRounds = 4

// getPersonRatio measures Get Person with 64 connections, and a bare
// net/http handler that writes the same JSON (a process of its own), with
// the same generator, in the same run, taking turns (ratioRounds slices of
// each): the ratio is what the service keeps of what net/http serves on
// this machine. On PostgreSQL wrk also takes turns with a bare read of the
// person's row (ceiling.go): what the service keeps of what the database
// serves.
func (m *measure) getPersonRatio() {
	const conns = 64
	ids := m.fx.samplePerson
	body, err := load{client: newClient(1), base: m.base, key: m.fx.key}.do(m.ctx, request{method: http.MethodGet, path: "/persons/" + ids[0], want: http.StatusOK})
	if err != nil {
		m.fail("get person: %v", err)
		return
	}
	handler, err := startRespondCeiling(m.dir, "get-person", http.StatusOK, body)
	if err != nil {
		m.fail("bare handler: %v", err)
		return
	}
	defer m.stopCeiling(handler)
	next := func(i int) request {
		return request{method: http.MethodGet, path: "/persons/" + ids[i%len(ids)], want: http.StatusOK}
	}
	slice := m.c.duration / ratioRounds
	serviceLoad := load{client: newClient(conns), base: m.base, key: m.fx.key, conns: conns, timeout: slice, next: next}
	bareLoad := load{client: newClient(conns), base: handler.base, conns: conns, timeout: slice, next: next}
	// Neither side's first second counts: its 64 connections are opened,
	// and the service's caches and prepared statements filled.
	m.logf("6. Get Person and a bare handler, 64 connections, warming up")
	for _, l := range []load{serviceLoad, bareLoad} {
		l.timeout = min(slice, time.Second)
		l.run(m.ctx)
	}
	var service, bare result
	ratios := make([]float64, 0, ratioRounds)
	m.logf("6. Get Person and a bare handler, 64 connections, taking turns")
	for range ratioRounds {
		s, b := serviceLoad.run(m.ctx), bareLoad.run(m.ctx)
		if b.perSecond() > 0 {
			ratios = append(ratios, s.perSecond()/b.perSecond())
		}
		service, bare = service.add(s), bare.add(b)
	}
	name := "6. Get Person, 64 connections"
	note := ""
	if service.errors > 0 {
		m.fail("%s: %d of %d requests failed; first: %v", name, service.errors, service.errors+service.n(), service.firstErr)
		note = fmt.Sprintf("**%d failed** ", service.errors)
	}
	slices.Sort(ratios)
	pairs := make([]string, len(ratios))
	for i, r := range ratios {
		pairs[i] = fmt.Sprintf("%.3f", r)
	}
	note += fmt.Sprintf("**%.3f of the bare handler**, the median of %d turns (%s; %.0f ÷ %.0f req/s in all)",
		median(ratios), len(ratios), strings.Join(pairs, ", "), service.perSecond(), bare.perSecond())
	m.rows = append(m.rows, row{engine: m.engine, name: name, n: service.n(), p50: service.p50(), p99: service.p99(),
		throughput: fmt.Sprintf("%.0f req/s", service.perSecond()), note: note})
	m.rows = append(m.rows, row{engine: m.engine, name: "6. bare net/http handler writing the same JSON, 64 connections", n: bare.n(),
		p50: bare.p50(), p99: bare.p99(), throughput: fmt.Sprintf("%.0f req/s", bare.perSecond()), note: "same generator, same run, taking turns with the row above"})
	ceilings := []ceiling{{target: target{handler.base, handler}, of: "the bare handler",
		name: "6. bare net/http handler writing the same JSON, 64 connections, by wrk"}}
	if m.engine == "postgres" {
		read, err := startCeiling(m.dir, "postgres-read", "postgres-read", "--database", m.database)
		if err != nil {
			m.fail("bare PostgreSQL read: %v", err)
			return
		}
		defer m.stopCeiling(read)
		ceilings = append(ceilings, ceiling{target: target{read.base, read}, of: "the bare PostgreSQL read",
			name: "6. bare PostgreSQL read: the persons row by primary key through pgxpool, as JSON, 64 connections, by wrk"})
	}
	m.wrkRatio("6. Get Person, 64 connections, by wrk", wrkScript{method: http.MethodGet, paths: personPaths(ids), key: m.fx.key}, conns, ceilings...)
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// personPaths are the Get Person paths of ids.
func personPaths(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = "/persons/" + id
	}
	return out
}

// ceiling is what a ratio divides by: a server in a process of its own,
// what the ratio's note calls it and the name of its own row.
type ceiling struct {
	target
	of, name string
}

// wrkRatio adds the row of the service driven by wrk in turns with its
// ceilings, with the ratio of their medians to each, and a row for each
// ceiling (nothing without wrk).
func (m *measure) wrkRatio(name string, s wrkScript, conns int, ceilings ...ceiling) {
	if !haveWrk() {
		m.logf("%s: no wrk on PATH (apt-get install wrk); skipped", name)
		return
	}
	m.logf("%s, taking turns with its ceilings", name)
	targets := []target{{m.base, m.pds}}
	for _, c := range ceilings {
		targets = append(targets, c.target)
	}
	results, ratios, err := m.wrkTurns(targets, s, conns)
	if err != nil {
		m.fail("%s: %v", name, err)
		return
	}
	service := results[0]
	var notes, cpus []string
	for i, c := range ceilings {
		notes = append(notes, ratioNote(ratios[i], c.of, service.perSecond(), results[i+1].perSecond()))
		cpus = append(cpus, fmt.Sprintf("%s %.0f", c.of, us(results[i+1].cpuPerRequest())))
	}
	note := strings.Join(notes, "; ") + fmt.Sprintf("; server CPU %.0f µs a request (%s)", us(service.cpuPerRequest()), strings.Join(cpus, ", "))
	if service.failed > 0 {
		m.fail("%s: %d of %d requests failed", name, service.failed, service.requests)
		note = fmt.Sprintf("**%d failed** ", service.failed) + note
	}
	m.rows = append(m.rows, row{engine: m.engine, name: name, n: service.requests, p50: service.p50, p99: service.p99,
		throughput: fmt.Sprintf("%.0f req/s", service.perSecond()), note: note})
	for i, c := range ceilings {
		r := results[i+1]
		m.rows = append(m.rows, row{engine: m.engine, name: c.name, n: r.requests, p50: r.p50, p99: r.p99,
			throughput: fmt.Sprintf("%.0f req/s", r.perSecond()), note: "wrk, one thread, in turns with the row above; a process of its own"})
	}
}

// median of sorted values; 0 for none.
func median(sorted []float64) float64 {
	switch n := len(sorted); {
	case n == 0:
		return 0
	case n%2 == 1:
		return sorted[n/2]
	default:
		return (sorted[n/2-1] + sorted[n/2]) / 2
	}
}

func (m *measure) breadcrumbPages() {
	if m.fx.breadcrumbs == 0 {
		return
	}
	for _, f := range []struct {
		label, query string
		total        int
	}{{"", "", m.fx.breadcrumbs}, {"by flavor, ", "&flavor=" + breadcrumbFlavors[0], m.fx.flavored}} {
		pages, skipped := pagesOf(f.total, 4000)
		for _, p := range pages {
			note := fmt.Sprintf("total %d, exact", f.total)
			if p == 1 && len(skipped) > 0 {
				note += "; " + strings.Join(skipped, "; ")
			}
			m.sequential("8. List Breadcrumbs, "+f.label+"size 25, "+pageName(p, f.total), note,
				get("/breadcrumbs?size=25"+f.query+"&page="+strconv.Itoa(p)), wantPage(f.total, p))
		}
	}
}

func (m *measure) upserts() {
	tag := domainHex()
	m.sequential("1. Upsert Person, new person", "201, sequential", func(i int) request {
		return request{method: http.MethodPost, path: "/persons", want: http.StatusCreated, body: fmt.Appendf(nil,
			`{"external_id":"new-%s-%d","email":"new-%s-%d@bench.example","first_name":"New"}`, tag, i, tag, i)}
	}, nil)
	// Persons drawn afresh by every run (unseededPersons).
	rng := unseededPersons()
	m.sequential("1. Upsert Person, matched person", "200; matched by external_id, first_name changes", func(i int) request {
		return request{method: http.MethodPost, path: "/persons", want: http.StatusOK, body: fmt.Appendf(nil,
			`{"external_id":%q,"first_name":"Matched %d"}`, seedExternalID(rng.IntN(m.fx.seeded)), i)}
	}, nil)
}

func (m *measure) sustainedUpserts() {
	tag := domainHex()
	m.loadRow("2. Upsert Person, new person, 32 connections, sustained", "201", 32, 0, m.c.duration, func(i int) request {
		return request{method: http.MethodPost, path: "/persons", want: http.StatusCreated, body: fmt.Appendf(nil,
			`{"external_id":"sus-%s-%d","email":"sus-%s-%d@bench.example"}`, tag, i, tag, i)}
	}, nil)
}

func (m *measure) appendBreadcrumbs() {
	rng := unseededPersons()
	m.sequential("8. Append Breadcrumb, person matched by external_id", "201, sequential", func(i int) request {
		return request{method: http.MethodPost, path: "/breadcrumbs", want: http.StatusCreated, body: fmt.Appendf(nil,
			`{"flavor":"page_view","external_id":%q}`, seedExternalID(rng.IntN(m.fx.seeded)))}
	}, nil)
}

// appendsRatio measures Append Breadcrumb with 32 connections, to persons
// drawn at random from the seeded ones, sustained, by wrk in turns with a
// bare handler that answers each POST with a breadcrumb's JSON.
func (m *measure) appendsRatio() {
	const conns = 32
	body, err := load{client: newClient(1), base: m.base, key: m.fx.key}.do(m.ctx, request{method: http.MethodPost, path: "/breadcrumbs",
		want: http.StatusCreated, body: fmt.Appendf(nil, `{"flavor":"page_view","external_id":%q}`, seedExternalID(0))})
	if err != nil {
		m.fail("append breadcrumb: %v", err)
		return
	}
	bare, err := startRespondCeiling(m.dir, "append-breadcrumb", http.StatusCreated, body)
	if err != nil {
		m.fail("bare handler: %v", err)
		return
	}
	defer m.stopCeiling(bare)
	rng := unseededPersons()
	bodies := make([]string, 10_000)
	for i := range bodies {
		bodies[i] = fmt.Sprintf(`{"flavor":"page_view","external_id":%q}`, seedExternalID(rng.IntN(m.fx.seeded)))
	}
	m.wrkRatio(fmt.Sprintf("8. Append Breadcrumb, 32 connections, random persons of %d, sustained, by wrk", m.fx.seeded),
		wrkScript{method: http.MethodPost, paths: []string{"/breadcrumbs"}, bodies: bodies, key: m.fx.key}, conns,
		ceiling{target: target{bare.base, bare}, of: "the bare handler",
			name: "8. bare net/http handler answering each POST with a breadcrumb, 32 connections, by wrk"})
}

// unseededPersons picks the persons of a write row, different ones in
// every run. A write moves its person's last-seen entries to the newest end
// of their indexes, so a --reuse run that wrote to the persons an earlier
// run had written to found them in pages already hot, and its matched
// upserts looked far faster than the first run's.
func unseededPersons() *rand.Rand {
	return rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
}

func domainHex() string { return strconv.FormatInt(time.Now().UnixNano()%1e9, 36) }
