package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// The peer group (--rows peer --peer URL --peer-admin EMAIL:PASSWORD):
// pds beside PocketBase, which the operator started on the same machine
// (pdsbench builds and runs nothing of it), on empty databases: pds serve
// (a process of its own) on a fresh database of the engine, PocketBase on
// a fresh collection that pdsbench makes through its superuser, with the
// fields of a person's identifiers and rules that let anyone create and
// view. Creates (Upsert Person of a new person against create-record) and
// reads (Get Person against view-record) take turns, ratioRounds slices
// each, driven by wrk with 64 connections; the row gives every turn's
// ratio, since the goal holds at every round, not on the median. pds keeps
// its durability: every write it acknowledges is synced to disk
// (PocketBase's SQLite runs with synchronous=NORMAL).

const peerConns = 64

func benchPeer(ctx context.Context, c config, engine, dir string) ([]row, []string, error) {
	if c.peer == "" || c.peerAdmin == "" {
		return nil, nil, errors.New("--rows peer needs --peer URL and --peer-admin EMAIL:PASSWORD of a PocketBase you started")
	}
	if !haveWrk() {
		return nil, nil, errors.New("--rows peer needs wrk (apt-get install wrk)")
	}
	logf := progress(engine + " peer")
	database, drop, err := freshDatabase(ctx, engine, dir, c.pgURL, false)
	if err != nil {
		return nil, nil, err
	}
	defer drop()
	st, err := open(ctx, database)
	if err != nil {
		return nil, nil, err
	}
	_, key, err := accountWithKey(ctx, st, "pdsbench peer")
	if err = errors.Join(err, st.Close()); err != nil {
		return nil, nil, err
	}
	srv, err := startPDS(c, "pds-serve", dir, database)
	if err != nil {
		return nil, nil, err
	}
	defer srv.stop()
	if err := srv.profileRows(c, engine, "peer"); err != nil {
		return nil, nil, err
	}
	base := srv.base
	pb, err := newPocketBase(ctx, c.peer, c.peerAdmin)
	if err != nil {
		return nil, nil, err
	}
	defer pb.drop()
	m := &measure{ctx: ctx, c: c, engine: engine, base: base, pds: srv, dir: dir, logf: logf, database: database, fx: fixture{key: key}}

	create := func(path string) wrkScript {
		return wrkScript{method: http.MethodPost, paths: []string{path}, key: key, bodyTwice: true,
			body: `{"external_id":"peer-%s","email":"peer-%s@bench.example"}`}
	}
	m.peerTurns("13. Upsert Person, new person ÷ PocketBase create-record, 64 connections, empty databases",
		create("/persons"), pb.base, create(pb.records()))

	ours, err := m.peerIDs(base+"/persons", key, "id")
	if err != nil {
		m.fail("peer: pds persons: %v", err)
		return m.rows, m.failures, nil
	}
	theirs, err := m.peerIDs(pb.base+pb.records(), "", "id")
	if err != nil {
		m.fail("peer: PocketBase records: %v", err)
		return m.rows, m.failures, nil
	}
	m.peerTurns("13. Get Person ÷ PocketBase view-record, 64 connections",
		wrkScript{method: http.MethodGet, paths: personPaths(ours), key: key}, pb.base,
		wrkScript{method: http.MethodGet, paths: recordPaths(pb.records(), theirs)})
	if err := srv.stop(); err != nil {
		m.fail("%v", err)
	}
	return m.rows, m.failures, nil
}

// peerTurns runs ours on the service and theirs on the peer in turns and
// adds the row.
func (m *measure) peerTurns(name string, ours wrkScript, peerBase string, theirs wrkScript) {
	m.logf("%s", name)
	slice := max(time.Second, m.c.duration/ratioRounds)
	var mine, them wrkResult
	var ratios []string
	least := 0.0
	for i := range ratioRounds + 1 {
		a, err := runWrk(m.ctx, target{m.base, m.pds}, ours, peerConns, slice)
		if err == nil {
			var b wrkResult
			if b, err = runWrk(m.ctx, target{base: peerBase}, theirs, peerConns, slice); err == nil && i > 0 {
				// The first turn of each warms up, unmeasured.
				mine, them = mine.add(a), them.add(b)
				r := a.perSecond() / b.perSecond()
				ratios = append(ratios, fmt.Sprintf("%.2f", r))
				if least == 0 || r < least {
					least = r
				}
			}
		}
		if err != nil {
			m.fail("%s: %v", name, err)
			return
		}
	}
	note := fmt.Sprintf("**%.2f× PocketBase at the least** of %d turns (%s; %.0f and %.0f req/s in all); server CPU %.0f µs a request",
		least, len(ratios), strings.Join(ratios, ", "), mine.perSecond(), them.perSecond(), us(mine.cpuPerRequest()))
	if mine.failed > 0 || them.failed > 0 {
		m.fail("%s: %d of pds's and %d of PocketBase's requests failed", name, mine.failed, them.failed)
		note += fmt.Sprintf(" **%d and %d failed**", mine.failed, them.failed)
	}
	m.rows = append(m.rows, row{engine: m.engine, name: name, n: mine.requests, p50: mine.p50, p99: mine.p99,
		throughput: fmt.Sprintf("%.0f req/s", mine.perSecond()), note: note})
	m.rows = append(m.rows, row{engine: m.engine, name: "13. PocketBase " + strings.SplitN(name, "÷ PocketBase ", 2)[1], n: them.requests,
		p50: them.p50, p99: them.p99, throughput: fmt.Sprintf("%.0f req/s", them.perSecond()), note: "wrk, in turns with the row above"})
}

// peerIDs reads up to a page of the ids of what url lists (pds's window
// list or PocketBase's records).
func (m *measure) peerIDs(url, key, field string) ([]string, error) {
	if strings.HasSuffix(url, "/persons") {
		url += "?size=100&updated_since=" + time.Now().UTC().Add(-time.Hour).Format(time.RFC3339)
	} else {
		url += "?perPage=100"
	}
	req, err := http.NewRequestWithContext(m.ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var page struct {
		Items []map[string]any `json:"items"`
	}
	if err := json.NewDecoder(res.Body).Decode(&page); err != nil {
		return nil, err
	}
	var ids []string
	for _, it := range page.Items {
		if id, ok := it[field].(string); ok {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("%s listed nothing", url)
	}
	return ids, nil
}

// pocketBase is the peer and the collection pdsbench made in it.
type pocketBase struct {
	ctx        context.Context
	base       string
	token      string
	collection string
}

func newPocketBase(ctx context.Context, base, admin string) (*pocketBase, error) {
	email, password, ok := strings.Cut(admin, ":")
	if !ok {
		return nil, errors.New("--peer-admin is EMAIL:PASSWORD")
	}
	pb := &pocketBase{ctx: ctx, base: strings.TrimSuffix(base, "/"), collection: "pdsbench_" + domainHex()}
	var auth struct {
		Token string `json:"token"`
	}
	if err := pb.call(http.MethodPost, "/api/collections/_superusers/auth-with-password",
		map[string]any{"identity": email, "password": password}, &auth); err != nil {
		return nil, fmt.Errorf("PocketBase superuser: %w", err)
	}
	pb.token = auth.Token
	err := pb.call(http.MethodPost, "/api/collections", map[string]any{
		"name": pb.collection, "type": "base", "createRule": "", "viewRule": "", "listRule": "",
		"fields":  []map[string]any{{"name": "external_id", "type": "text"}, {"name": "email", "type": "email"}},
		"indexes": []string{"CREATE UNIQUE INDEX idx_" + pb.collection + "_ext ON " + pb.collection + " (external_id)"},
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("PocketBase collection: %w", err)
	}
	return pb, nil
}

func (pb *pocketBase) records() string { return "/api/collections/" + pb.collection + "/records" }

func recordPaths(records string, ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = records + "/" + id
	}
	return out
}

// drop deletes the collection made for the run.
func (pb *pocketBase) drop() {
	_ = pb.call(http.MethodDelete, "/api/collections/"+pb.collection, nil, nil)
}

func (pb *pocketBase) call(method, path string, body, out any) error {
	var r io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(pb.ctx, method, pb.base+path, r)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if pb.token != "" {
		req.Header.Set("Authorization", pb.token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %d %.300s", method, path, res.StatusCode, raw)
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}
