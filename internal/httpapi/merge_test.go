package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/httpapi/apitest"
	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/internal/webhook/webhooktest"
)

// TestMergePersons drives Merge Persons through the API: the survivor
// answered, the merged id's 404 urn:pds:problem:merged on every person
// operation, aliases listed and resolving, the refusals, one signed
// person.merged for the subscription listing it, and the erasure of the
// survivor leaving plain 404s.
func TestMergePersons(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		rcMerged, rcOther := webhooktest.NewReceiver(t), webhooktest.NewReceiver(t)
		env := newWebhookEnv(t, eng, webhooktest.Settings(rcMerged, rcOther))
		acc := env.NewAccount()
		key := env.Key(acc)
		reader := env.Key(acc, domain.ScopePersonsRead)
		otherKey := env.Key(env.NewAccount())
		createWebhook(env.Env, key, rcMerged.URL, "person.merged")
		createWebhook(env.Env, key, rcOther.URL, "person.created", "person.updated")

		a := upsertPerson(env.Env, key, map[string]any{"email": "ada@x.test", "first_name": "Ada"}, 201)
		b := upsertPerson(env.Env, key, map[string]any{"email": "bea@x.test", "external_id": "crm-b", "last_name": "Lovelace"}, 201)
		tag := env.Post(key, "/tags", map[string]any{"name": "vip", "context": "person"}).Want(201).Map()["id"].(string)
		env.Post(key, "/persons/"+b.ID+"/tags", map[string]any{"tag_ids": []string{tag}}).Want(200)
		foreign := upsertPerson(env.Env, otherKey, map[string]any{"email": "f@x.test"}, 201)
		env.Clock.Advance(env.window)
		env.run()
		wantRequests(t, rcOther, 2)

		// Refusals first: nothing changes.
		for _, c := range []struct {
			body   any
			status int
		}{
			{map[string]any{"from": a.ID}, 400},
			{map[string]any{}, 400},
			{map[string]any{"from": nil}, 400},
			{map[string]any{"from": 7}, 400},
			{map[string]any{"from": b.ID, "into": a.ID}, 400},
			{map[string]any{"from": "per_nobody"}, 404},
			{map[string]any{"from": foreign.ID}, 404},
		} {
			pr := env.Post(key, "/persons/"+a.ID+"/merge", c.body).Want(c.status).Problem()
			if c.status == 400 && (len(pr.Errors) == 0 || pr.Errors[0].Pointer == "") {
				t.Fatalf("%v: %+v", c.body, pr)
			}
			if c.status == 404 && pr.Type != "about:blank" {
				t.Fatalf("%v: %+v", c.body, pr)
			}
		}
		if pr := env.Post(key, "/persons/"+a.ID+"/merge", map[string]any{"from": a.ID}).Want(400).Problem(); pr.Errors[0].Pointer != "/from" {
			t.Fatalf("merging into itself: %+v", pr)
		}
		env.Post(reader, "/persons/"+a.ID+"/merge", map[string]any{"from": b.ID}).Want(403)
		env.Post(otherKey, "/persons/"+a.ID+"/merge", map[string]any{"from": b.ID}).Want(404)

		env.Clock.Advance(time.Minute)
		mergedAt := nowText(env.Env)
		var got personView
		env.Post(key, "/persons/"+a.ID+"/merge", map[string]any{"from": b.ID}).Want(200).JSON(&got)
		if got.ID != a.ID || deref(got.Email) != "ada@x.test" || deref(got.ExternalID) != "crm-b" ||
			deref(got.FirstName) != "Ada" || deref(got.LastName) != "Lovelace" || len(got.TagIDs) != 1 || got.DateCreated != a.DateCreated {
			t.Fatalf("survivor %+v", got)
		}
		// Idempotent.
		env.Post(key, "/persons/"+a.ID+"/merge", map[string]any{"from": b.ID}).Want(200)

		for _, req := range []struct{ method, path string }{
			{"GET", "/persons/" + b.ID}, {"PATCH", "/persons/" + b.ID}, {"POST", "/persons/" + b.ID + "/tags"},
			{"DELETE", "/persons/" + b.ID + "/tags/" + tag}, {"DELETE", "/persons/" + b.ID}, {"GET", "/persons/" + b.ID + "/aliases"},
			{"POST", "/persons/" + b.ID + "/merge"},
		} {
			var body any
			switch {
			case req.method == "PATCH":
				body = map[string]any{"first_name": "x"}
			case req.method == "POST" && req.path[len(req.path)-4:] == "tags":
				body = map[string]any{"tag_ids": []string{tag}}
			case req.method == "POST":
				body = map[string]any{"from": foreign.ID}
			}
			pr := env.Do(apitest.Request{Method: req.method, Path: req.path, Key: key, Body: body}).Want(404).Problem()
			if pr.Type != domain.MergedProblemType || pr.MergedInto != a.ID {
				t.Fatalf("%s %s: %+v", req.method, req.path, pr)
			}
		}
		if pr := env.Post(key, "/persons/"+foreign.ID+"/merge", map[string]any{"from": b.ID}).Want(404).Problem(); pr.Type != "about:blank" {
			t.Fatalf("another account's person: %+v", pr)
		}

		aliases := env.Get(reader, "/persons/"+a.ID+"/aliases").Want(200).Map()
		items, _ := aliases["items"].([]any)
		if aliases["total"] != float64(1) || len(items) != 1 {
			t.Fatalf("aliases %v", aliases)
		}
		if al := items[0].(map[string]any); al["kind"] != "email" || al["value"] != "bea@x.test" || al["from"] != b.ID || al["date_merged"] != mergedAt {
			t.Fatalf("alias %v", al)
		}
		env.Get(reader, "/persons/"+a.ID+"/aliases?size=0").Want(400)
		env.Get(otherKey, "/persons/"+a.ID+"/aliases").Want(404)

		// Every identifier finds the survivor.
		if p := upsertPerson(env.Env, key, map[string]any{"email": "Bea@X.test", "phone": "+1 555 0100"}, 200); p.ID != a.ID || deref(p.Email) != "ada@x.test" {
			t.Fatalf("upsert through the alias: %+v", p)
		}
		for _, crumb := range []map[string]any{{"flavor": "page_view", "email": "bea@x.test"}, {"flavor": "page_view", "person_id": b.ID}} {
			if got := env.Post(key, "/breadcrumbs", crumb).Want(201).Map(); got["person_id"] != a.ID {
				t.Fatalf("breadcrumb %v went to %v", crumb, got["person_id"])
			}
		}
		page := env.Get(reader, "/persons?email=bea@x.test").Want(200).Map()
		if items, _ := page["items"].([]any); len(items) != 1 || items[0].(map[string]any)["id"] != a.ID {
			t.Fatalf("lookup through the alias: %v", page)
		}

		env.run()
		wantRequests(t, rcOther, 2)
		d := wantRequests(t, rcMerged, 1)[0]
		var body map[string]any
		if err := json.Unmarshal(d.Body, &body); err != nil {
			t.Fatal(err)
		}
		data, _ := body["data"].(map[string]any)
		if body["event"] != "person.merged" || keysOf(data) != "date_merged,id,merged_into" || data["id"] != b.ID ||
			data["merged_into"] != a.ID || data["date_merged"] != mergedAt || d.Header.Get("Service-Event") != "person.merged" {
			t.Fatalf("person.merged delivery %s", d.Body)
		}
		env.Clock.Advance(env.window)
		env.run()
		if last := wantRequests(t, rcOther, 3)[2]; !json.Valid(last.Body) || last.Header.Get("Service-Event") != "person.updated" {
			t.Fatalf("the survivor's burst: %s %s", last.Header.Get("Service-Event"), last.Body)
		}

		// The export carries the survivor's aliases, as listed; a line of a
		// person without any has no such member (apitest has checked every
		// line against PersonExportLine).
		env.Post(key, "/persons", map[string]any{"email": "plain@x.test"}).Want(201)
		exported := 0
		for line := range bytes.Lines(env.Get(reader, "/persons/export").Want(200).Body) {
			var l map[string]any
			if err := json.Unmarshal(line, &l); err != nil {
				t.Fatal(err)
			}
			exported++
			as, has := l["aliases"]
			switch {
			case l["id"] == a.ID && (!has || fmt.Sprint(as) != fmt.Sprint(items)):
				t.Fatalf("the survivor's export line %s: aliases %v, want %v", line, as, items)
			case l["id"] != a.ID && has:
				t.Fatalf("a line of a person without aliases carries them: %s", line)
			}
		}
		if exported != 2 {
			t.Fatalf("the export has %d lines, want the survivor and one other", exported)
		}

		env.Delete(key, "/persons/"+a.ID+"?suppress=true").Want(204)
		if pr := env.Get(key, "/persons/"+b.ID).Want(404).Problem(); pr.Type != "about:blank" || pr.MergedInto != "" {
			t.Fatalf("the merged id after the survivor's erasure: %+v", pr)
		}
		if pr := env.Post(key, "/persons", map[string]any{"email": "bea@x.test"}).Want(409).Problem(); pr.Type != domain.SuppressedProblemType {
			t.Fatalf("the erased alias: %+v", pr)
		}
	})
}
