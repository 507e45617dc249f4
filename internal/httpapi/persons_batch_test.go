package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/httpapi/apitest"
	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/internal/webhook/webhooktest"
)

// batchResult is one result of POST /persons/batch as a client decodes it.
type batchResult struct {
	Status  int              `json:"status"`
	Person  *personView      `json:"person"`
	Problem *json.RawMessage `json:"problem"`
}

func (r batchResult) problem(t *testing.T) apitest.Problem {
	t.Helper()
	if r.Problem == nil {
		t.Fatalf("result %+v has no problem", r)
	}
	var p apitest.Problem
	if err := json.Unmarshal(*r.Problem, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// upsertBatch sends a batch (items are marshalled, or sent as is when they
// are json.RawMessage) and returns its results.
func upsertBatch(env *apitest.Env, key string, items ...any) []batchResult {
	env.T.Helper()
	var out struct {
		Results []batchResult `json:"results"`
	}
	env.Post(key, "/persons/batch", map[string]any{"persons": items}).Want(200).JSON(&out)
	if len(out.Results) != len(items) {
		env.T.Fatalf("%d results for %d items", len(out.Results), len(items))
	}
	return out.Results
}

// TestUpsertPersonsBatch sends a batch mixing every outcome an item can
// have and checks each result against what Upsert Person answers alone.
func TestUpsertPersonsBatch(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		acc := env.NewAccount()
		key := env.Key(acc)
		createField(env, key, map[string]any{"collection": "Person", "data_type": "int", "key": "age"})
		a := upsertPerson(env, key, map[string]any{"external_id": "a", "email": "a@x.test"}, 201)
		b := upsertPerson(env, key, map[string]any{"email": "b@x.test"}, 201)
		env.Clock.Advance(time.Minute)

		refused := []any{
			map[string]any{"external_id": "a", "email": "B@x.test"}, // 409: b holds the email
			map[string]any{"email": ""},                             // 400: empty identifier
			map[string]any{"emial": "typo@x.test"},                  // 400: unknown member
			42,                                                      // 400: not an object
			map[string]any{"email": "c@x.test", "custom_fields": map[string]any{"age": "old"}}, // 400: data_type
			json.RawMessage(`{"first_name":"nul\u0000"}`),                                      // 400: NUL in one item only
			map[string]any{"first_name": strings.Repeat("x", 256)},                             // 400: too long
		}
		items := append([]any{
			map[string]any{"external_id": "new-1", "email": "n1@x.test", "custom_fields": map[string]any{"age": 5}}, // 201
			map[string]any{"external_id": "a", "first_name": "Ann"},                                                 // 200: matches a
			map[string]any{"external_id": "new-1", "last_name": "Second"},                                           // 200: matches item 0
			map[string]any{"email": "a@x.test", "phone": "1"},                                                       // 200: a by email
		}, refused...)
		res := upsertBatch(env, key, items...)

		for i, want := range []int{201, 200, 200, 200, 409, 400, 400, 400, 400, 400, 400} {
			if res[i].Status != want {
				t.Fatalf("item %d: status %d, want %d (%+v)", i, res[i].Status, want, res[i])
			}
			if (res[i].Person != nil) != (want < 300) || (res[i].Problem != nil) == (want < 300) {
				t.Fatalf("item %d: %+v carries the wrong member", i, res[i])
			}
		}
		created := res[0].Person
		if created.ID == a.ID || deref(created.ExternalID) != "new-1" || created.CustomFields["age"] != "5" || created.DateCreated != nowText(env) {
			t.Fatalf("created %+v", created)
		}
		if second := res[2].Person; second.ID != created.ID || deref(second.LastName) != "Second" || deref(second.Email) != "n1@x.test" ||
			second.CustomFields["age"] != "5" {
			t.Fatalf("the second item for new-1 gave %+v, want the person of the first", second)
		}
		if res[1].Person.ID != a.ID || res[3].Person.ID != a.ID || deref(res[3].Person.FirstName) != "Ann" || deref(res[3].Person.Phone) != "1" {
			t.Fatalf("matches of a: %+v, %+v", res[1].Person, res[3].Person)
		}

		// Each refusal is the problem Upsert Person answers alone, its
		// pointers under /persons/<index>.
		for k, item := range refused {
			i := 4 + k
			got := res[i].problem(t)
			alone := env.Post(key, "/persons", item)
			want := alone.Problem()
			if got.Status != alone.Status || got.Status != want.Status || got.Title != want.Title || got.ExistingID != want.ExistingID {
				t.Fatalf("item %d: %+v, alone %+v", i, got, want)
			}
			if len(want.Errors) == 0 {
				want.Errors = append(want.Errors, got.Errors...) // the item itself, pointed at below
			}
			if len(got.Errors) != len(want.Errors) {
				t.Fatalf("item %d: errors %+v, alone %+v", i, got.Errors, want.Errors)
			}
			for j := range want.Errors {
				if !strings.HasPrefix(got.Errors[j].Pointer, fmt.Sprintf("/persons/%d", i)) {
					t.Fatalf("item %d: pointer %q", i, got.Errors[j].Pointer)
				}
				if w := want.Errors[j].Pointer; w != got.Errors[j].Pointer && fmt.Sprintf("/persons/%d", i)+w != got.Errors[j].Pointer &&
					!(w == "/" && got.Errors[j].Pointer == fmt.Sprintf("/persons/%d", i)) {
					t.Fatalf("item %d: pointer %q, alone %q", i, got.Errors[j].Pointer, w)
				}
			}
		}
		if p := res[4].problem(t); p.ExistingID != b.ID {
			t.Fatalf("conflict names %q, want %s", p.ExistingID, b.ID)
		}
		for i, ptr := range map[int]string{5: "/persons/5/email", 6: "/persons/6/emial", 7: "/persons/7",
			8: "/persons/8/custom_fields/age", 9: "/persons/9/first_name", 10: "/persons/10/first_name"} {
			if p := res[i].problem(t); len(p.Errors) != 1 || p.Errors[0].Pointer != ptr {
				t.Fatalf("item %d: errors %+v, want the pointer %s", i, p.Errors, ptr)
			}
		}

		// The refused items wrote nothing: b keeps its email, a took only
		// what the accepted items gave it, c was never made.
		if got := getPerson(env, key, b.ID); deref(got.Email) != "b@x.test" {
			t.Fatalf("b after the batch: %+v", got)
		}
		if got := getPerson(env, key, a.ID); deref(got.Email) != "a@x.test" || deref(got.FirstName) != "Ann" {
			t.Fatalf("a after the batch: %+v", got)
		}
		if page := listOf[personView](env, key, "/persons?email=c@x.test"); page.Total != 0 {
			t.Fatalf("a refused item made a person: %+v", page)
		}
		if n := len(exportAll(env, key, "")); n != 3 {
			t.Fatalf("%d persons after the batch, want a, b and new-1", n)
		}
	})
}

// TestUpsertPersonsBatchRequestErrors: a request that is not a usable batch
// is one problem, and nothing of it is written.
func TestUpsertPersonsBatchRequestErrors(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		key := env.Key(env.NewAccount())
		good := `{"external_id":"x"}`
		many := make([]string, 101)
		for i := range many {
			many[i] = fmt.Sprintf(`{"external_id":"m%d"}`, i)
		}
		huge := `{"persons":[{"external_id":"h","first_name":"` + strings.Repeat("x", 1<<20) + `"}]}`
		for _, tc := range []struct {
			name, body, ct string
			status         int
			pointer        string
		}{
			{"malformed JSON", `{"persons":[` + good + `,`, "", 400, ""},
			{"not an object", `[` + good + `]`, "", 400, ""},
			{"no persons", `{}`, "", 400, "/persons"},
			{"persons null", `{"persons":null}`, "", 400, "/persons"},
			{"persons empty", `{"persons":[]}`, "", 400, "/persons"},
			{"persons not an array", `{"persons":` + good + `}`, "", 400, "/persons"},
			{"101 items", `{"persons":[` + strings.Join(many, ",") + `]}`, "", 400, "/persons"},
			{"an unknown member", `{"persons":[` + good + `],"atomic":true}`, "", 400, "/atomic"},
			{"a member twice in an item", `{"persons":[{"external_id":"x","external_id":"y"}]}`, "", 400, "/persons/0/external_id"},
			{"over 1 MiB", huge, "", 413, ""},
			{"not JSON", `{"persons":[` + good + `]}`, "text/plain", 415, ""},
		} {
			res := env.Do(apitest.Request{Method: http.MethodPost, Path: "/persons/batch", Key: key, Body: tc.body, ContentType: tc.ct})
			if res.Status != tc.status {
				t.Fatalf("%s: status %d, want %d: %s", tc.name, res.Status, tc.status, res.Body)
			}
			p := res.Problem()
			if tc.pointer != "" && (len(p.Errors) != 1 || p.Errors[0].Pointer != tc.pointer) {
				t.Fatalf("%s: errors %+v, want the pointer %s", tc.name, p.Errors, tc.pointer)
			}
		}
		if got := exportAll(env, key, ""); len(got) != 0 {
			t.Fatalf("refused batches wrote %d persons", len(got))
		}
	})
}

// TestUpsertPersonsBatchCountsOnce: a batch of 100 is one request of the
// key's budget, and needs persons:write.
func TestUpsertPersonsBatchCountsOnce(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, testenv.SQLite)
	acc := env.NewAccount()
	key := env.Key(acc)
	items := make([]any, 100)
	for i := range items {
		items[i] = map[string]any{"external_id": fmt.Sprintf("p%d", i)}
	}
	res := env.Post(key, "/persons/batch", map[string]any{"persons": items}).Want(200)
	if got := res.Header.Get("RateLimit"); !strings.Contains(got, "r=599;") {
		t.Fatalf("RateLimit %q after one batch of 100, want 599 remaining", got)
	}
	readOnly := env.Key(acc, "persons:read")
	if p := env.Post(readOnly, "/persons/batch", map[string]any{"persons": items[:1]}).Want(403).Problem(); p.MissingScope != "persons:write" {
		t.Fatalf("missing scope %q", p.MissingScope)
	}
}

// TestUpsertPersonsBatchEvents: a batch fires what its upserts would fire
// one by one: a person created and changed in one batch is one
// person.created, a matched person one person.updated, a refused item
// nothing, and another account's subscription nothing.
func TestUpsertPersonsBatchEvents(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		rc, rcForeign := webhooktest.NewReceiver(t), webhooktest.NewReceiver(t)
		env := newWebhookEnv(t, eng, webhooktest.Settings(rc, rcForeign))
		key := env.Key(env.NewAccount())
		otherKey := env.Key(env.NewAccount())
		createWebhook(env.Env, key, rc.URL, "person.created", "person.updated")
		createWebhook(env.Env, otherKey, rcForeign.URL, "person.created", "person.updated")
		old := upsertPerson(env.Env, key, map[string]any{"external_id": "old", "email": "old@x.test"}, 201)
		env.Clock.Advance(env.window)
		env.run()
		wantRequests(t, rc, 1) // old's person.created

		res := upsertBatch(env.Env, key,
			map[string]any{"external_id": "new", "first_name": "One"},
			map[string]any{"external_id": "new", "first_name": "Two"},
			map[string]any{"external_id": "old", "first_name": "Changed"},
			map[string]any{"external_id": "new", "email": "old@x.test"},   // 409: old holds the email
			map[string]any{"external_id": "old", "first_name": "Changed"}, // matched, changes nothing
		)
		if res[3].Status != 409 || res[4].Status != 200 {
			t.Fatalf("results %+v", res)
		}
		env.Clock.Advance(env.window)
		env.run()
		got := map[string]string{}
		for _, r := range wantRequests(t, rc, 3)[1:] {
			var body struct {
				Event string `json:"event"`
				Data  struct {
					ID        string `json:"id"`
					FirstName string `json:"first_name"`
				} `json:"data"`
			}
			if err := json.Unmarshal(r.Body, &body); err != nil {
				t.Fatal(err)
			}
			got[body.Data.ID] = body.Event + " " + body.Data.FirstName
		}
		want := map[string]string{res[0].Person.ID: "person.created Two", old.ID: "person.updated Changed"}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("deliveries %v, want %v", got, want)
		}
		wantRequests(t, rcForeign, 0)
	})
}
