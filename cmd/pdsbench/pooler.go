package main

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pds-dev/pds/internal/bouncer"
	"github.com/pds-dev/pds/internal/store/postgres"
)

// The pooler group (--rows pooler, PostgreSQL): what a transaction-mode
// pooler between the service and its database costs. A second pds serve
// process serves the seeded database through Debian's pgbouncer
// (internal/bouncer), whose server pool is as large as the service's own
// pool, and Get Person (64 connections) and sustained new upserts (32)
// take turns on the two servers, ratioRounds slices each: the row gives the
// median of the turns' ratios, pooler ÷ direct.
func init() { rowGroups["pooler"] = (*measure).poolerRows }

func (m *measure) poolerRows() {
	if m.engine != "postgres" {
		return
	}
	bin := bouncer.Binary()
	if bin == "" {
		m.fail("pooler: pgbouncer is not installed (apt-get install pgbouncer)")
		return
	}
	pooled, stop, err := m.servePooled(bin)
	if err != nil {
		m.fail("pooler: %v", err)
		return
	}
	defer stop()
	ids := m.fx.samplePerson
	run := domainHex()
	var made atomic.Int64
	for _, r := range []struct {
		name  string
		conns int
		next  func(i int) request
	}{
		{"11. Get Person through PgBouncer, 64 connections", 64, func(i int) request {
			return request{method: http.MethodGet, path: "/persons/" + ids[i%len(ids)], want: http.StatusOK}
		}},
		{"11. Upsert Person, new person, through PgBouncer, 32 connections, sustained", 32, func(int) request {
			// Every run of the turns numbers its requests from 0.
			i := made.Add(1)
			return request{method: http.MethodPost, path: "/persons", want: http.StatusCreated, body: fmt.Appendf(nil,
				`{"external_id":"pool-%s-%d","email":"pool-%s-%d@bench.example"}`, run, i, run, i)}
		}},
	} {
		m.pooledTurns(r.name, r.conns, pooled, r.next)
	}
}

// servePooled serves the seeded database through a pgbouncer of its own,
// with a second pds serve as the README's "Through a pooler" starts one.
func (m *measure) servePooled(bin string) (base string, stop func(), err error) {
	server, schema, err := splitSchema(m.database)
	if err != nil {
		return "", nil, err
	}
	b, err := bouncer.Start(bin, server, postgres.PoolSize())
	if err != nil {
		return "", nil, err
	}
	pooledURL, err := b.AddSchema(m.ctx, schema)
	if err != nil {
		b.Close()
		return "", nil, err
	}
	srv, err := startPDS(m.c, "pds-serve-pgbouncer", m.dir, pooledURL, "--migrate=false")
	if err != nil {
		b.Close()
		return "", nil, err
	}
	if err := srv.profileRows(m.c, m.engine, "pds-serve-pgbouncer"); err != nil {
		m.fail("pooler: %v", err)
	}
	return srv.base, func() {
		if err := srv.stop(); err != nil {
			m.fail("pooler: %v", err)
		}
		b.Close()
	}, nil
}

// splitSchema parts a benchmark database URL into the server's URL and the
// schema its search_path names.
func splitSchema(database string) (server, schema string, err error) {
	u, err := url.Parse(database)
	if err != nil {
		return "", "", err
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return "", "", err
	}
	schema = q.Get("search_path")
	q.Del("search_path")
	u.RawQuery = q.Encode()
	return u.String(), schema, nil
}

// pooledTurns runs next on the direct server and the pooled one in turns,
// a second of each unmeasured first, and adds a row for each with the
// median ratio.
func (m *measure) pooledTurns(name string, conns int, pooled string, next func(int) request) {
	slice := m.c.duration / ratioRounds
	direct := load{client: newClient(conns), base: m.base, key: m.fx.key, conns: conns, timeout: slice, next: next}
	through := load{client: newClient(conns), base: pooled, key: m.fx.key, conns: conns, timeout: slice, next: next}
	m.logf("%s, warming up", name)
	for _, l := range []load{direct, through} {
		l.timeout = min(slice, time.Second)
		l.run(m.ctx)
	}
	m.logf("%s, taking turns with direct PostgreSQL", name)
	var d, p result
	ratios := make([]float64, 0, ratioRounds)
	for range ratioRounds {
		dr, pr := direct.run(m.ctx), through.run(m.ctx)
		if dr.perSecond() > 0 {
			ratios = append(ratios, pr.perSecond()/dr.perSecond())
		}
		d, p = d.add(dr), p.add(pr)
	}
	slices.Sort(ratios)
	pairs := make([]string, len(ratios))
	for i, r := range ratios {
		pairs[i] = fmt.Sprintf("%.3f", r)
	}
	note := fmt.Sprintf("**%.3f of direct**, the median of %d turns (%s; %.0f ÷ %.0f req/s in all); a server pool of %d",
		median(ratios), len(ratios), strings.Join(pairs, ", "), p.perSecond(), d.perSecond(), postgres.PoolSize())
	for _, r := range []struct {
		res  result
		what string
	}{{p, "pooled"}, {d, "direct"}} {
		if r.res.errors > 0 {
			m.fail("%s (%s): %d of %d requests failed; first: %v", name, r.what, r.res.errors, r.res.errors+r.res.n(), r.res.firstErr)
			note += fmt.Sprintf(" **%d failed %s**", r.res.errors, r.what)
		}
	}
	m.rows = append(m.rows, row{engine: m.engine, name: name, n: p.n(), p50: p.p50(), p99: p.p99(),
		throughput: fmt.Sprintf("%.0f req/s", p.perSecond()), note: note})
	m.rows = append(m.rows, row{engine: m.engine, name: strings.Replace(name, "through PgBouncer", "direct", 1), n: d.n(),
		p50: d.p50(), p99: d.p99(), throughput: fmt.Sprintf("%.0f req/s", d.perSecond()), note: "taking turns with the row above"})
}
