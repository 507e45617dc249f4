package httpapi_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/httpapi/apitest"
	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/internal/webhook/webhooktest"
)

// TestWritersOfOnePersonAllSucceed: sixteen clients a round write one
// person at once (and a second one, crossing), forty rounds, while the
// worker delivers the last round's changes to an HTTPS receiver. Every
// answer is a success, as if each request had come alone: on PostgreSQL
// writers that met on one person used to deadlock and get 500s. At the
// end each tag is held once, the counts are exact, and every round's change
// reached the receiver once.
func TestWritersOfOnePersonAllSucceed(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		rc := webhooktest.NewReceiver(t)
		env := newWebhookEnv(t, eng, webhooktest.Settings(rc))
		key := env.Key(env.NewAccount())
		createWebhook(env.Env, key, rc.URL, "person.created", "person.updated")
		createField(env.Env, key, map[string]any{"collection": "Person", "data_type": "str", "key": "plan"})
		a, b, c := createTag(env.Env, key, "alpha", "person").ID, createTag(env.Env, key, "beta", "person").ID,
			createTag(env.Env, key, "gamma", "person").ID
		p := upsertPerson(env.Env, key, map[string]any{"email": "ada@example.com", "external_id": "crm-ada"}, 201)
		q := upsertPerson(env.Env, key, map[string]any{"email": "bob@example.com", "external_id": "crm-bob"}, 201)

		type write func(round, writer int) apitest.Request
		// Each kind is sent twice a round; the second of a pair crosses the
		// first (the other order, the other person).
		second := func(w int) bool { return w >= 8 }
		writes := []write{
			func(_, w int) apitest.Request {
				ids := []string{a, b}
				if second(w) {
					ids = []string{b, a}
				}
				return apitest.Request{Method: "POST", Path: "/persons/" + p.ID + "/tags", Key: key, Body: map[string]any{"tag_ids": ids}}
			},
			func(_, w int) apitest.Request {
				ids := []string{b, a}
				if second(w) {
					ids = []string{a, b}
				}
				return apitest.Request{Method: "POST", Path: "/persons/" + p.ID + "/tags", Key: key, Body: map[string]any{"tag_ids": ids}}
			},
			func(_, _ int) apitest.Request {
				return apitest.Request{Method: "DELETE", Path: "/persons/" + p.ID + "/tags/" + c, Key: key}
			},
			func(r, w int) apitest.Request {
				return apitest.Request{Method: "PATCH", Path: "/persons/" + p.ID, Key: key, Body: map[string]any{
					"first_name": fmt.Sprintf("first %d.%d", r, w), "custom_fields": map[string]any{"plan": fmt.Sprintf("plan %d.%d", r, w)}}}
			},
			func(r, w int) apitest.Request {
				return apitest.Request{Method: "POST", Path: "/persons", Key: key, Body: map[string]any{
					"email": "ada@example.com", "last_name": fmt.Sprintf("last %d.%d", r, w)}}
			},
			func(_, w int) apitest.Request {
				email := "ada@example.com"
				if second(w) {
					email = "bob@example.com"
				}
				return apitest.Request{Method: "POST", Path: "/breadcrumbs", Key: key, Body: map[string]any{"flavor": "page_view", "email": email}}
			},
			func(r, w int) apitest.Request {
				id := q.ID
				if second(w) {
					id = p.ID
				}
				return apitest.Request{Method: "POST", Path: "/breadcrumbs", Key: key, Body: map[string]any{"flavor": "email_view", "person_id": id},
					Header: http.Header{"Idempotency-Key": {fmt.Sprintf("%s-%d", id, r)}}}
			},
			func(r, w int) apitest.Request {
				items := []map[string]any{
					{"email": "ada@example.com", "phone": fmt.Sprintf("+1 %d.%d", r, w)},
					{"email": "bob@example.com", "last_name": fmt.Sprintf("last %d.%d", r, w)},
				}
				if second(w) {
					items[0], items[1] = items[1], items[0]
				}
				return apitest.Request{Method: "POST", Path: "/persons/batch", Key: key, Body: map[string]any{"persons": items}}
			},
		}

		const rounds, writers = 40, 16
		// The rounds' changes make bursts of their own, after the creations'.
		env.Clock.Advance(env.window + time.Second)
		statuses := map[string]int{}
		var failed []string
		var mu sync.Mutex
		for r := range rounds {
			env.Delete(key, "/persons/"+p.ID+"/tags/"+a).Want(204)
			env.Post(key, "/persons/"+p.ID+"/tags", map[string]any{"tag_ids": []string{c}}).Want(200)
			var wg sync.WaitGroup
			// The worker closes the last round's bursts and delivers them
			// while this round writes.
			wg.Go(env.run)
			for w := range writers {
				req := writes[w%len(writes)](r, w)
				wg.Go(func() {
					res := env.Do(req)
					ok := res.Status >= 200 && res.Status < 300
					if ok && strings.HasSuffix(req.Path, "/batch") {
						ok = !strings.Contains(string(res.Body), `"problem"`)
					}
					mu.Lock()
					defer mu.Unlock()
					statuses[fmt.Sprint(res.Status)]++
					if !ok {
						failed = append(failed, fmt.Sprintf("round %d: %s %s: %d %s", r, req.Method, req.Path, res.Status, res.Body))
					}
				})
			}
			wg.Wait()
			// A burst a writer held while the worker closed it waits for its
			// claim's lease to run out, as a later pass of the worker would.
			env.Clock.Advance(time.Minute + time.Second)
			env.run()
			env.Clock.Advance(env.window)
		}
		if len(failed) > 0 {
			t.Fatalf("%d of %d writes failed (statuses %v); first: %s", len(failed), rounds*writers, statuses, failed[0])
		}

		got := getPerson(env.Env, key, p.ID)
		tags := slices.Sorted(slices.Values(got.TagIDs))
		if want := slices.Sorted(slices.Values([]string{a, b})); !slices.Equal(tags, want) {
			t.Errorf("tags of the person: %v, want %v once each", got.TagIDs, want)
		}
		since := url.QueryEscape(got.DateLastSeen)
		for _, tc := range []struct {
			tags  string
			total int
		}{{"&tag_ids=" + a + "&tag_ids=" + b, 1}, {"&tag_ids=" + c, 0}, {"", 2}} {
			if n := env.Get(key, "/persons?updated_since="+since+tc.tags).Want(200).Map()["total"]; n != float64(tc.total) {
				t.Errorf("persons seen since the last write%s: %v, want %d", tc.tags, n, tc.total)
			}
		}
		crumbs := rounds * 4
		if n := env.Get(key, "/breadcrumbs?size=1").Want(200).Map()["total"]; n != float64(crumbs) {
			t.Errorf("breadcrumbs: %v, want %d", n, crumbs)
		}
		for _, id := range []string{p.ID, q.ID} {
			if n := env.Get(key, "/breadcrumbs?size=1&person_id="+id).Want(200).Map()["total"]; n != float64(crumbs/2) {
				t.Errorf("breadcrumbs of %s: %v, want %d", id, n, crumbs/2)
			}
		}

		// Every round changed both persons: one delivery each a round, and
		// the creations, each delivery id received once.
		env.Clock.Advance(env.window)
		env.run()
		byPerson, seen := map[string][]string{}, map[string]int{}
		for _, req := range rc.Requests() {
			var body struct {
				ID    string `json:"id"`
				Event string `json:"event"`
				Data  struct {
					ID     string   `json:"id"`
					TagIDs []string `json:"tag_ids"`
				} `json:"data"`
			}
			if err := json.Unmarshal(req.Body, &body); err != nil {
				t.Fatal(err)
			}
			seen[body.ID]++
			byPerson[body.Data.ID] = append(byPerson[body.Data.ID], body.Event)
		}
		for id, n := range seen {
			if n != 1 {
				t.Errorf("delivery %s received %d times", id, n)
			}
		}
		for _, id := range []string{p.ID, q.ID} {
			events := byPerson[id]
			if len(events) != rounds+1 || events[0] != "person.created" || slices.Contains(events[1:], "person.created") {
				t.Errorf("deliveries of %s: %d (%v...), want %d: the creation, then one person.updated a round",
					id, len(events), events[:min(3, len(events))], rounds+1)
			}
		}
		if len(byPerson) != 2 {
			t.Errorf("deliveries of persons %v, want two", slices.Collect(maps.Keys(byPerson)))
		}
	})
}
