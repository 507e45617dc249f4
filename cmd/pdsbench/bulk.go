package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/pds-dev/pds/internal/store"
)

// The bulk rows (--rows bulk): N new persons through POST /persons/batch,
// and GET /persons/export of the seeded account.
func init() { rowGroups["bulk"] = (*measure).bulkRows }

const (
	// batchSize and batchClients are the shape of the batch row: 100
	// persons per request, 4 clients at once.
	batchSize    = 100
	batchClients = 4
)

func (m *measure) bulkRows() {
	m.export()
	m.batchUpserts()
}

// batchUpserts makes --persons new persons on a fresh, empty account
// through POST /persons/batch, and checks every item was created.
func (m *measure) batchUpserts() {
	key, err := m.freshAccountKey()
	if err != nil {
		m.fail("batch: a fresh account: %v", err)
		return
	}
	n := m.c.persons
	requests := (n + batchSize - 1) / batchSize
	name := fmt.Sprintf("9. Upsert Persons batch, new persons, %d per request, %d clients", batchSize, batchClients)
	m.logf("%s", name)
	res := load{client: newClient(batchClients), base: m.base, key: key, conns: batchClients, count: requests,
		next: func(i int) request {
			return request{method: http.MethodPost, path: "/persons/batch", want: http.StatusOK, body: batchBody(i, min(batchSize, n-i*batchSize))}
		},
		check: func(i int, body []byte) error { return allCreated(body, min(batchSize, n-i*batchSize)) },
	}.run(m.ctx)
	note := fmt.Sprintf("**%d persons in %.1f s** on an empty account", n, res.elapsed.Seconds())
	if res.errors > 0 {
		m.fail("%s: %d of %d requests failed; first: %v", name, res.errors, requests, res.firstErr)
		note += fmt.Sprintf(" **%d requests failed**", res.errors)
	}
	m.rows = append(m.rows, row{engine: m.engine, name: name, n: res.n(), p50: res.p50(), p99: res.p99(),
		throughput: fmt.Sprintf("%.0f persons/s", float64(res.n()*batchSize)/res.elapsed.Seconds()), note: note})
}

// freshAccountKey makes an empty account and a key for it (setup).
func (m *measure) freshAccountKey() (key string, err error) {
	err = m.setup(func(st store.Store) error {
		_, key, err = accountWithKey(m.ctx, st, "pdsbench batch")
		return err
	})
	return key, err
}

// batchBody is request i of the batch row: persons i*batchSize onwards,
// each with the attributes the import's persons have.
func batchBody(i, count int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"persons":[`)
	for k := range count {
		if k > 0 {
			b.WriteByte(',')
		}
		p := i*batchSize + k
		fmt.Fprintf(&b, `{"external_id":"batch-%d","email":"batch-%d@bench.example","first_name":"First %d","last_name":"Last","phone":"+1555%07d"}`,
			p, p, p, p)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// allCreated checks a batch answer: count results, each a 201.
func allCreated(body []byte, count int) error {
	var out struct {
		Results []struct {
			Status int `json:"status"`
		} `json:"results"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return err
	}
	if len(out.Results) != count {
		return fmt.Errorf("%d results for %d items", len(out.Results), count)
	}
	for i, r := range out.Results {
		if r.Status != http.StatusCreated {
			return fmt.Errorf("item %d: status %d, want 201", i, r.Status)
		}
	}
	return nil
}

// export reads GET /persons/export of the seeded account to its end,
// line by line as a client would, and checks it holds every person once,
// in id order. While it runs, a sampler reads the server's resident memory
// (VmRSS of its process) every 10 ms: the peak over the export, less the
// reading before it, is what the export cost the server.
func (m *measure) export() {
	name := "9. Export Persons, every person of the seeded account"
	m.logf("%s", name)
	// The write rows of the scale group add persons to the seeded account;
	// List Persons' exact total says how many it holds now.
	want, err := m.accountPersons()
	if err != nil {
		m.fail("%s: counting the account's persons: %v", name, err)
		return
	}
	before, _ := m.pds.resident()
	stop := sampleResident(m.pds, 10*time.Millisecond)
	t0 := time.Now()
	lines, bytesRead, err := m.readExport(m.fx.key)
	took := time.Since(t0)
	top := stop()
	rss := "resident memory not readable (no /proc/PID/status)"
	if before > 0 {
		rss = fmt.Sprintf("server RSS %.0f MB before, peak %.0f MB during (+%.0f MB)", mb(before), mb(top), mb(max(0, top-before)))
	}
	note := fmt.Sprintf("**%d lines in %.1f s**, %.0f MB; %s", lines, took.Seconds(), mb(bytesRead), rss)
	switch {
	case err != nil:
		m.fail("%s: %v", name, err)
		note += " **failed**"
	case lines != want:
		m.fail("%s: %d lines, want the %d persons of the account", name, lines, want)
		note += " **incomplete**"
	}
	m.rows = append(m.rows, row{engine: m.engine, name: name, throughput: fmt.Sprintf("%.0f persons/s", float64(lines)/took.Seconds()), note: note})
}

// accountPersons is the seeded account's total in window mode, which
// covers every person: all were last seen after the seed's since.
func (m *measure) accountPersons() (int, error) {
	body, err := load{client: newClient(1), base: m.base, key: m.fx.key}.do(m.ctx,
		request{method: http.MethodGet, path: "/persons?" + m.windowQuery(), want: http.StatusOK})
	if err != nil {
		return 0, err
	}
	var p page
	err = json.Unmarshal(body, &p)
	return p.Total, err
}

// readExport streams the export and counts its lines, checking that ids
// rise strictly (each person once, in id order); it keeps one line at a
// time.
func (m *measure) readExport(key string) (lines int, read int64, err error) {
	req, err := http.NewRequestWithContext(m.ctx, http.MethodGet, m.base+"/persons/export", nil)
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := newClient(1).Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		return 0, 0, fmt.Errorf("status %d: %s", res.StatusCode, b)
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	last := ""
	for sc.Scan() {
		line := sc.Bytes()
		read += int64(len(line)) + 1
		// The id is the first member of every line (the contract's
		// order); reading it without decoding the line leaves the CPU to
		// the server, on the same cores.
		rest, ok := bytes.CutPrefix(line, []byte(`{"id":"`))
		end := bytes.IndexByte(rest, '"')
		if !ok || end < 0 || !json.Valid(line) {
			return lines, read, fmt.Errorf("line %d is not a person: %.100s", lines+1, line)
		}
		if id := string(rest[:end]); id > last {
			last = id
		} else {
			return lines, read, fmt.Errorf("line %d: id %s after %s", lines+1, id, last)
		}
		lines++
	}
	return lines, read, sc.Err()
}

// sampleResident samples p's VmRSS every interval until stop, which
// returns the highest reading.
func sampleResident(p *process, interval time.Duration) (stop func() int64) {
	var (
		mu   sync.Mutex
		top  int64
		done = make(chan struct{})
		wg   sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			if v, err := p.resident(); err == nil {
				mu.Lock()
				top = max(top, v)
				mu.Unlock()
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() int64 {
		close(done)
		wg.Wait()
		return top
	}
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }
