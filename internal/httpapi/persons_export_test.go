package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/httpapi/apitest"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/testenv"
)

// exportAll runs GET /persons/export with the query and decodes its lines
// (apitest has checked each against the contract).
func exportAll(env *apitest.Env, key, rawQuery string) []personView {
	env.T.Helper()
	path := "/persons/export"
	if rawQuery != "" {
		path += "?" + rawQuery
	}
	res := env.Get(key, path).Want(200)
	if ct := res.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		env.T.Fatalf("content type %q", ct)
	}
	out := []personView{}
	for line := range bytes.Lines(res.Body) {
		var p personView
		if err := json.Unmarshal(line, &p); err != nil {
			env.T.Fatalf("line %q: %v", line, err)
		}
		out = append(out, p)
	}
	return out
}

// seedBatches makes n persons through POST /persons/batch, external ids
// <prefix>0 ... and returns their ids in the order made.
func seedBatches(env *apitest.Env, key, prefix string, n int) []string {
	env.T.Helper()
	var ids []string
	for start := 0; start < n; start += 100 {
		var items []any
		for i := start; i < min(n, start+100); i++ {
			items = append(items, map[string]any{"external_id": fmt.Sprintf("%s%d", prefix, i)})
		}
		for _, r := range upsertBatch(env, key, items...) {
			if r.Status != 201 {
				env.T.Fatalf("seed: %+v", r)
			}
			ids = append(ids, r.Person.ID)
		}
	}
	return ids
}

// TestExportPersons: every person exactly once, in id order, over several
// chunks of the store; resumed with after; narrowed by updated_since of any
// age and by tag_ids; nothing of another account.
func TestExportPersons(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		key := env.Key(env.NewAccount())
		otherKey := env.Key(env.NewAccount())
		ids := seedBatches(env, key, "p", 2345) // three chunks of the store
		seedBatches(env, otherKey, "p", 10)
		slices.Sort(ids)

		all := exportAll(env, key, "")
		if got := personIDs(all); !slices.Equal(got, ids) {
			t.Fatalf("export of %d persons gave %d lines, or not each once in id order", len(ids), len(got))
		}
		if got := personIDs(exportAll(env, key, "after="+url.QueryEscape(ids[1499]))); !slices.Equal(got, ids[1500:]) {
			t.Fatalf("resumed after line 1500: %d lines, want %d", len(got), len(ids)-1500)
		}
		if got := exportAll(env, key, "after="+url.QueryEscape(ids[len(ids)-1])); len(got) != 0 {
			t.Fatalf("after the last id: %d lines", len(got))
		}

		// A person changed later, and tags held by some.
		env.Clock.Advance(40 * 24 * time.Hour)
		since := env.Clock.Now().UTC().Format(time.RFC3339Nano)
		vip, staff := createTag(env, key, "vip", "person"), createTag(env, key, "staff", "person")
		var changed, both []string
		for i, id := range ids {
			switch {
			case i%500 == 0:
				env.Post(key, "/persons/"+id+"/tags", map[string]any{"tag_ids": []string{vip.ID, staff.ID}}).Want(200)
				both = append(both, id)
				changed = append(changed, id)
			case i%700 == 0:
				env.Post(key, "/persons/"+id+"/tags", map[string]any{"tag_ids": []string{vip.ID}}).Want(200)
				changed = append(changed, id)
			}
		}
		// updated_since of any age, unlike List Persons.
		old := apitest.Start.Add(-time.Hour).Format(time.RFC3339)
		if got := exportAll(env, key, "updated_since="+old); len(got) != len(ids) {
			t.Fatalf("updated_since 40 days back: %d lines, want %d", len(got), len(ids))
		}
		if got := personIDs(exportAll(env, key, "updated_since="+url.QueryEscape(since))); !slices.Equal(got, changed) {
			t.Fatalf("updated_since: %v, want %v", got, changed)
		}
		if got := personIDs(exportAll(env, key, "tag_ids="+vip.ID+"&tag_ids="+staff.ID)); !slices.Equal(got, both) {
			t.Fatalf("tag_ids (ALL): %v, want %v", got, both)
		}
		if got := personIDs(exportAll(env, key, "tag_ids="+vip.ID+","+staff.ID+"&updated_since="+url.QueryEscape(since)+
			"&after="+both[0])); !slices.Equal(got, both[1:]) {
			t.Fatalf("tags, updated_since and after: %v, want %v", got, both[1:])
		}
		for _, p := range exportAll(env, key, "tag_ids="+staff.ID) {
			if !slices.Contains(p.TagIDs, staff.ID) || !slices.Contains(p.TagIDs, vip.ID) {
				t.Fatalf("line without its tags: %+v", p)
			}
		}
		env.Delete(key, "/tags/"+staff.ID).Want(204)
		if got := exportAll(env, key, "tag_ids="+staff.ID); len(got) != 0 {
			t.Fatalf("an archived tag matched %d persons", len(got))
		}

		// Another account sees only its own, whatever it asks.
		foreign := exportAll(env, otherKey, "")
		if len(foreign) != 10 {
			t.Fatalf("the other account exported %d persons, want its 10", len(foreign))
		}
		for _, p := range foreign {
			if slices.Contains(ids, p.ID) {
				t.Fatalf("the other account exported %s", p.ID)
			}
		}
		if got := exportAll(env, otherKey, "tag_ids="+vip.ID); len(got) != 0 {
			t.Fatalf("another account's tag matched %d persons", len(got))
		}
	})
}

// TestExportPersonsParameters: parameters are parsed strictly.
func TestExportPersonsParameters(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, testenv.SQLite)
	acc := env.NewAccount()
	key := env.Key(acc)
	for query, param := range map[string]string{
		"updated_snce=2026-01-01T00:00:00Z": "updated_snce",
		"page=2":                            "page",
		"updated_since=yesterday":           "updated_since",
		"updated_since=2026-01-01T00:00:00Z&updated_since=2026-01-02T00:00:00Z": "updated_since",
		"after=":          "after",
		"after=a&after=b": "after",
	} {
		wantInvalid(t, env.Get(key, "/persons/export?"+query).Want(400).Problem(), param)
	}
	if p := env.Get(env.Key(acc, "persons:write"), "/persons/export").Want(403).Problem(); p.MissingScope != "persons:read" {
		t.Fatalf("missing scope %q", p.MissingScope)
	}
	res := env.Get(env.Key(acc), "/persons/export")
	if len(res.Body) != 0 || !bytes.Contains([]byte(res.Header.Get("RateLimit")), []byte("r=599;")) {
		t.Fatalf("an empty account's export: %q, RateLimit %q", res.Body, res.Header.Get("RateLimit"))
	}
}

// exportProbe is a store whose export chunks the test watches: the second
// chunk waits until the request's context ends (a client gone), or the
// first fails at once when failFirst is set.
type exportProbe struct {
	store.Store
	calls     atomic.Int32
	failFirst bool
	second    chan struct{}
	ended     chan error
}

func (s *exportProbe) OpenExport(ctx context.Context, accountID string) (store.PersonExport, error) {
	exp, err := s.Store.OpenExport(ctx, accountID)
	if err != nil {
		return nil, err
	}
	return &probedExport{PersonExport: exp, probe: s}, nil
}

// probedExport reads the chunks of one export for exportProbe.
type probedExport struct {
	store.PersonExport
	probe *exportProbe
}

func (e *probedExport) Read(ctx context.Context, sel domain.PersonExport, limit int) ([]domain.Person, error) {
	s := e.probe
	n := s.calls.Add(1)
	switch {
	case s.failFirst:
		return nil, errors.New("the database went away")
	case n == 2:
		close(s.second)
		select {
		case <-ctx.Done():
			s.ended <- ctx.Err()
			return nil, ctx.Err()
		case <-time.After(10 * time.Second):
			s.ended <- errors.New("the request's context was not cancelled after the client went away")
			return nil, errors.New("timeout")
		}
	}
	return e.PersonExport.Read(ctx, sel, limit)
}

// TestExportPersonsClientGoesAway: a client that disconnects mid-stream
// cancels the request's context, which the export's next read sees, and
// the export reads nothing more.
func TestExportPersonsClientGoesAway(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		probe := &exportProbe{Store: eng.NewStore(t), second: make(chan struct{}), ended: make(chan error, 1)}
		env := apitest.NewOn(t, probe)
		key := env.Key(env.NewAccount())
		seedBatches(env, key, "p", 1500)

		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, env.HTTP.URL+"/persons/export", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := env.HTTP.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(res.Body).ReadBytes('\n')
		if err != nil || res.StatusCode != 200 || !bytes.HasPrefix(line, []byte(`{"id":"per_`)) {
			t.Fatalf("status %d, first line %q, %v", res.StatusCode, line, err)
		}
		<-probe.second
		cancel()
		res.Body.Close()
		if err := <-probe.ended; !errors.Is(err, context.Canceled) {
			t.Fatalf("the export went on: %v", err)
		}
		// Close waits for the export's handler to return: no read can
		// follow.
		env.HTTP.Close()
		if n := probe.calls.Load(); n != 2 {
			t.Fatalf("%d reads of the export, want 2", n)
		}
	})
}

// TestExportPersonsFailsBeforeTheFirstLine: an error before anything is
// sent is a problem document with its status.
func TestExportPersonsFailsBeforeTheFirstLine(t *testing.T) {
	t.Parallel()
	probe := &exportProbe{Store: testenv.SQLite.NewStore(t), failFirst: true}
	env := apitest.NewOn(t, probe)
	key := env.Key(env.NewAccount())
	if p := env.Get(key, "/persons/export").Want(500).Problem(); p.Status != 500 {
		t.Fatalf("problem %+v", p)
	}
}
