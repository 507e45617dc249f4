package httpapi_test

import (
	"net/url"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/httpapi/apitest"
	"github.com/pds-dev/pds/internal/testenv"
)

type changesView struct {
	Items []struct {
		Cursor  string      `json:"cursor"`
		Person  *personView `json:"person"`
		Deleted *struct {
			ID          string `json:"id"`
			DateDeleted string `json:"date_deleted"`
		} `json:"deleted"`
	} `json:"items"`
	Next    string `json:"next"`
	HasMore bool   `json:"has_more"`
}

func changesOf(env *apitest.Env, key string, q url.Values) changesView {
	env.T.Helper()
	var v changesView
	env.Get(key, "/persons/changes?"+q.Encode()).Want(200).JSON(&v)
	return v
}

// follow reads the feed from after until has_more is false, a page of
// size at a time, and returns each item's person id ("-" before a
// tombstone's) and where it ended.
func follow(env *apitest.Env, key, after string, size int) ([]string, string) {
	env.T.Helper()
	var ids []string
	for {
		q := url.Values{"size": {strconv.Itoa(size)}}
		if after != "" {
			q.Set("after", after)
		}
		page := changesOf(env, key, q)
		for _, it := range page.Items {
			switch {
			case it.Person != nil:
				ids = append(ids, it.Person.ID)
			case it.Deleted != nil:
				ids = append(ids, "-"+it.Deleted.ID)
			default:
				env.T.Fatalf("an item with neither person nor deleted: %+v", it)
			}
		}
		if page.Next == "" {
			env.T.Fatal("a page without next")
		}
		after = page.Next
		if !page.HasMore {
			return ids, after
		}
	}
}

// TestChangeFeed: the feed over HTTP: pages by size, tombstones with only
// an id and a time, the export's cursor, strict parameters, cursors of
// another account, and a cursor older than the retention (410).
func TestChangeFeed(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		key := env.Key(env.NewAccount())
		otherKey := env.Key(env.NewAccount())
		ids := seedBatches(env, key, "p", 7)
		env.Post(key, "/persons", map[string]any{"external_id": "p2", "first_name": "Moved"}).Want(200)
		want := append(slices.Delete(slices.Clone(ids), 2, 3), ids[2])
		got, head := follow(env, key, "", 3)
		if !slices.Equal(got, want) {
			t.Fatalf("the feed %v, want %v (p2 moved to the end)", got, want)
		}
		if more, _ := follow(env, key, head, 3); len(more) != 0 {
			t.Fatalf("after the last item: %v", more)
		}

		// An erasure is a tombstone, after an export's cursor.
		res := env.Get(key, "/persons/export").Want(200)
		cursor := res.Header.Get("Pds-Changes-Cursor")
		env.Delete(key, "/persons/"+ids[0]).Want(204)
		got, _ = follow(env, key, cursor, 100)
		if !slices.Equal(got, []string{"-" + ids[0]}) {
			t.Fatalf("from the export's cursor: %v, want the erasure alone", got)
		}
		page := changesOf(env, key, url.Values{"after": {cursor}})
		if d := page.Items[0].Deleted; d.DateDeleted != env.Clock.Now().UTC().Format("2006-01-02T15:04:05.000Z") {
			t.Fatalf("the tombstone says %+v, want the erasure's time", d)
		}

		// Strict parameters; another account's cursor is refused.
		for q, param := range map[string]string{
			"after=nope": "after", "after=": "after", "size=0": "size", "size=101": "size", "size=x": "size",
			"wait=31": "wait", "wait=-1": "wait", "unknown=1": "unknown", "after=" + url.QueryEscape(head) + "&after=" + url.QueryEscape(head): "after",
		} {
			if p := env.Get(key, "/persons/changes?"+q).Want(400).Problem(); !names(p, param) {
				t.Errorf("?%s: %+v, want a 400 naming %s", q, p, param)
			}
		}
		if p := env.Get(otherKey, "/persons/changes?after="+url.QueryEscape(head)).Want(400).Problem(); !names(p, "after") {
			t.Errorf("another account's cursor: %+v", p)
		}
		// A cursor issued longer ago than the retention is gone.
		env.Clock.Advance(31 * 24 * time.Hour)
		if p := env.Get(key, "/persons/changes?after="+url.QueryEscape(head)).Want(410).Problem(); p.Type != domain.CursorExpiredProblemType {
			t.Errorf("an expired cursor: %+v", p)
		}
	})
}

// TestChangeFeedWaits: reads that wait answer once another instance
// commits a change, well within their wait; with nothing committed a read
// answers at the end of its wait with no items; while ten reads of a key
// wait, one more is a 429.
func TestChangeFeedWaits(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		other := apitest.NewOn(t, env.Store, apitest.WithClock(env.Clock))
		acc := env.NewAccount()
		key := env.Key(acc)
		_, head := follow(env, key, "", 100)

		start := time.Now()
		empty := changesOf(env, key, url.Values{"wait": {"1"}, "after": {head}})
		if len(empty.Items) != 0 || empty.Next == "" || time.Since(start) < time.Second {
			t.Fatalf("a wait with nothing committed: %+v after %s", empty, time.Since(start))
		}

		var wg sync.WaitGroup
		answered := make(chan changesView, domain.MaxChangesWaiters)
		for range domain.MaxChangesWaiters {
			wg.Go(func() {
				var page changesView
				env.Get(key, "/persons/changes?wait=30&after="+url.QueryEscape(empty.Next)).Want(200).JSON(&page)
				answered <- page
			})
		}
		// Once the ten wait, one more read that would wait is refused.
		for deadline := time.Now().Add(30 * time.Second); env.Server.ChangeWaiting() < domain.MaxChangesWaiters; {
			if time.Now().After(deadline) {
				t.Fatalf("%d reads wait after 30 s, want %d", env.Server.ChangeWaiting(), domain.MaxChangesWaiters)
			}
			time.Sleep(10 * time.Millisecond)
		}
		refused := env.Get(key, "/persons/changes?wait=1&after="+url.QueryEscape(empty.Next)).Want(429)
		if refused.Header.Get("Retry-After") == "" {
			t.Fatal("a 429 without Retry-After")
		}
		wrote := time.Now()
		other.Post(other.Key(acc), "/persons", map[string]any{"external_id": "late"}).Want(201)
		wg.Wait()
		took := time.Since(wrote)
		close(answered)
		for page := range answered {
			if len(page.Items) != 1 || page.Items[0].Person == nil {
				t.Fatalf("a waiting read answered %+v", page)
			}
		}
		// Answered by the commit, not by the end of their 30 s wait; how
		// soon depends on the machine.
		t.Logf("the waiting reads answered %s after the write", took)
		if took >= 30*time.Second {
			t.Fatalf("the waiting reads answered %s after the write: at the end of their wait, not at the commit", took)
		}
	})
}

// names says whether a problem names the query parameter.
func names(p apitest.Problem, param string) bool {
	for _, e := range p.Errors {
		if e.Parameter == param {
			return true
		}
	}
	return false
}
