package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// The import group (--rows import): a live account's writes while `pds
// import persons` writes into it. An import must not hold anything every
// writer of its account needs (issue 44: on PostgreSQL it used to lock the
// account row, whose key every new person and breadcrumb checks), so the
// writes keep their usual latency throughout.
func init() { rowGroups[importGroup] = (*measure).importRows }

const (
	importGroup = "import"
	// liveClients send the live writes: half append breadcrumbs to seeded
	// persons, half upsert new persons.
	liveClients = 4
)

// importedPersons is how many persons the row imports: three tenths of the
// seed (300,000 at the default million).
func (c config) importedPersons() int { return max(1, c.persons*3/10) }

func (m *measure) importRows() {
	n := m.c.importedPersons()
	name := fmt.Sprintf("10. Append Breadcrumb and Upsert Person (new) during `pds import persons` of %d new persons into the same account, %d clients",
		n, liveClients)
	m.logf("%s", name)
	dir, err := os.MkdirTemp("", "pdsbench-import-")
	if err != nil {
		m.fail("%s: %v", name, err)
		return
	}
	defer os.RemoveAll(dir)
	run := domainHex()
	file := filepath.Join(dir, "import.jsonl")
	if err := writeImport(file, n, run); err != nil {
		m.fail("%s: %v", name, err)
		return
	}

	ctx, stop := context.WithCancel(m.ctx)
	var live liveResult
	var wg sync.WaitGroup
	wg.Go(func() { live = m.liveWrites(ctx, run) })
	took, _, err := importPersons(m.ctx, m.c.pdsBin, m.database, m.fx.account, file, n)
	stop()
	wg.Wait()
	if err != nil {
		m.fail("%s: %v", name, err)
		return
	}
	note := fmt.Sprintf("the import took %.1f s (%.0f persons/s)", took.Seconds(), float64(n)/took.Seconds())
	if live.errors > 0 {
		m.fail("%s: %d of %d requests failed; first: %v", name, live.errors, live.errors+live.n(), live.firstErr)
		note += fmt.Sprintf(" **%d failed**", live.errors)
	}
	m.rows = append(m.rows, row{engine: m.engine, name: name, n: live.n(), p50: live.p50(), p99: live.p99(),
		throughput: fmt.Sprintf("%.0f req/s", live.perSecond()), note: note})
	m.fx.persons += n + live.created
}

// liveResult is a live run's result, and how many persons its upserts made.
type liveResult struct {
	result
	created int
}

// liveWrites sends the live writes until ctx ends; a request cut short by
// the end is not counted.
func (m *measure) liveWrites(ctx context.Context, run string) liveResult {
	client := newClient(liveClients)
	rng := unseededPersons()
	var (
		mu   sync.Mutex
		out  liveResult
		wg   sync.WaitGroup
		next int
	)
	started := time.Now()
	for c := range liveClients {
		wg.Go(func() {
			l := load{client: client, base: m.base, key: m.fx.key}
			for ctx.Err() == nil {
				mu.Lock()
				i := next
				next++
				seeded := rng.IntN(m.fx.seeded)
				mu.Unlock()
				rq := request{method: http.MethodPost, path: "/breadcrumbs", want: http.StatusCreated,
					body: fmt.Appendf(nil, `{"flavor":"page_view","email":%q}`, seedEmail(seeded))}
				if c%2 == 1 {
					rq = request{method: http.MethodPost, path: "/persons", want: http.StatusCreated,
						body: fmt.Appendf(nil, `{"external_id":"live-%s-%d","email":"live-%s-%d@bench.example"}`, run, i, run, i)}
				}
				t0 := time.Now()
				_, err := l.do(context.Background(), rq)
				d := time.Since(t0)
				mu.Lock()
				switch {
				case err != nil:
					out.errors++
					if out.firstErr == nil {
						out.firstErr = fmt.Errorf("%s %s: %w", rq.method, rq.path, err)
					}
				default:
					out.latencies = append(out.latencies, d)
					if c%2 == 1 {
						out.created++
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	out.elapsed = time.Since(started)
	slices.Sort(out.latencies)
	return out
}

// writeImport writes the row's import file: n new persons, named for the
// run so that a --reuse run imports new ones again.
func writeImport(path string, n int, run string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for i := range n {
		fmt.Fprintf(w, `{"external_id":"imp-%s-%d","email":"imp-%s-%d@bench.example","first_name":"Imported %d","last_name":"Last"}`+"\n",
			run, i, run, i, i)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
