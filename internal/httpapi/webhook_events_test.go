package httpapi_test

import (
	"encoding/json"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/pds-dev/pds/internal/httpapi/apitest"
	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/internal/webhook/webhooktest"
	"github.com/pds-dev/pds/pkg/webhookverify"
)

// The keys of the delivery body and of its data (spec section 2.9).
const (
	deliveryKeys = "created,data,event,id"
	dataKeys     = "0_person_url,address,age,companies,custom_data,custom_fields,date_created,date_last_seen,edu,email," +
		"email_opt_out,ethnicity,external_id,first_name,id,income,is_archived,language,last_name,name,occupation,phone," +
		"pseudonym,tag_ids,tags,upsert_result"
	addressKeys = "administrative_area_code,administrative_area_name,continent_code,country_code,country_code2,country_name," +
		"lat,lng,locality,organization,postal_code,premise1,premise2,region_name,sub_administrative_area_code," +
		"sub_administrative_area_name,timezone"
)

var hex32 = regexp.MustCompile(`^[0-9a-f]{32}$`)

func keysOf(m map[string]any) string { return strings.Join(slices.Sorted(maps.Keys(m)), ",") }

// TestPersonEventsEndToEnd drives persons through the API and checks what
// real HTTPS receivers get: a creation and the edits inside its window are
// one person.created; later edits one person.updated; each subscription gets
// exactly the events it lists; the body carries every key of spec section
// 2.9 (its data is the extended view), and verifies with the public
// verifier until 300 s have passed.
func TestPersonEventsEndToEnd(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		rcBoth, rcCreated, rcUpdated, rcForeign := webhooktest.NewReceiver(t), webhooktest.NewReceiver(t), webhooktest.NewReceiver(t), webhooktest.NewReceiver(t)
		env := newWebhookEnv(t, eng, webhooktest.Settings(rcBoth, rcCreated, rcUpdated, rcForeign))
		key := env.Key(env.NewAccount())
		otherKey := env.Key(env.NewAccount())
		both := createWebhook(env.Env, key, rcBoth.URL, "person.created", "person.updated")
		createWebhook(env.Env, key, rcCreated.URL, "person.created")
		createWebhook(env.Env, key, rcUpdated.URL, "person.updated")
		createWebhook(env.Env, otherKey, rcForeign.URL, "person.created", "person.updated")
		createField(env.Env, key, map[string]any{"collection": "Person", "data_type": "int", "key": "score"})
		vip := createTag(env.Env, key, "vip", "person")

		// A creation, then edits of every kind inside the window.
		p := upsertPerson(env.Env, key, map[string]any{"external_id": "e1", "email": "ada@x.test", "first_name": "Ada",
			"custom_fields": map[string]any{"score": 5}}, 201)
		env.Clock.Advance(time.Minute)
		env.Patch(key, "/persons/"+p.ID, map[string]any{"last_name": "Lovelace"}).Want(200)
		env.Clock.Advance(time.Minute)
		env.Post(key, "/persons/"+p.ID+"/tags", map[string]any{"tag_ids": []string{vip.ID}}).Want(200)
		env.Clock.Advance(env.window - time.Millisecond)
		env.run()
		wantRequests(t, rcBoth, 0)
		env.Clock.Advance(time.Millisecond)
		env.run()

		got := wantRequests(t, rcBoth, 1)[0]
		wantRequests(t, rcCreated, 1)
		wantRequests(t, rcUpdated, 0)
		var body map[string]any
		if err := json.Unmarshal(got.Body, &body); err != nil {
			t.Fatal(err)
		}
		if keysOf(body) != deliveryKeys || body["event"] != "person.created" || !hex32.MatchString(body["id"].(string)) ||
			body["created"] != nowText(env.Env) {
			t.Fatalf("body %s", got.Body)
		}
		doc, err := apitest.Document()
		if err != nil {
			t.Fatal(err)
		}
		if err := doc.Components.Schemas["DeliveryBody"].Value.VisitJSON(body, openapi3.EnableJSONSchema2020()); err != nil {
			t.Fatalf("the delivery does not match the contract's DeliveryBody: %v", err)
		}
		data := body["data"].(map[string]any)
		if keysOf(data) != dataKeys || keysOf(data["address"].(map[string]any)) != addressKeys {
			t.Fatalf("data keys %s, address keys %s", keysOf(data), keysOf(data["address"].(map[string]any)))
		}
		extended := env.Get(key, "/persons/"+p.ID+"?extended=true").Want(200).Map()
		if !reflect.DeepEqual(data, extended) {
			t.Fatalf("data differs from the extended view:\n%v\n%v", data, extended)
		}
		if data["name"] != "Ada Lovelace" || data["custom_fields"].(map[string]any)["score"] != "5" ||
			!slices.Equal(anyStrings(data["tag_ids"]), []string{vip.ID}) {
			t.Fatalf("data %v does not hold every edit of the burst", data)
		}
		h := got.Header
		if h.Get("Service-Webhook-Id") != both.ID || h.Get("Service-Delivery-Id") != body["id"] || h.Get("Service-Event") != "person.created" {
			t.Fatalf("headers %v", h)
		}
		now := env.Clock.Now()
		for _, c := range []struct {
			at time.Time
			ok bool
		}{{now, true}, {now.Add(300 * time.Second), true}, {now.Add(-300 * time.Second), true},
			{now.Add(301 * time.Second), false}, {now.Add(-301 * time.Second), false}} {
			err := webhookverify.Verify(h, got.Body, []string{both.Secret}, c.at, webhookverify.Options{})
			if (err == nil) != c.ok {
				t.Errorf("verify %s after signing: %v", c.at.Sub(now), err)
			}
		}

		// Edits to the existing person: one person.updated.
		env.Clock.Advance(time.Hour)
		env.Patch(key, "/persons/"+p.ID, map[string]any{"first_name": "Augusta"}).Want(200)
		env.Clock.Advance(2 * time.Minute)
		env.Delete(key, "/persons/"+p.ID+"/tags/"+vip.ID).Want(204)
		env.Clock.Advance(env.window)
		env.run()
		var updated map[string]any
		if err := json.Unmarshal(wantRequests(t, rcBoth, 2)[1].Body, &updated); err != nil {
			t.Fatalf("update delivery body: %v", err)
		}
		if updated["event"] != "person.updated" || updated["id"] == body["id"] ||
			updated["data"].(map[string]any)["first_name"] != "Augusta" || len(updated["data"].(map[string]any)["tag_ids"].([]any)) != 0 {
			t.Fatalf("update delivery %v", updated)
		}
		wantRequests(t, rcUpdated, 1)
		wantRequests(t, rcCreated, 1)

		// An upsert that changes nothing, and a breadcrumb for an existing
		// person, fire nothing; a breadcrumb that creates a person fires
		// person.created.
		env.Clock.Advance(time.Hour)
		upsertPerson(env.Env, key, map[string]any{"external_id": "e1", "first_name": "Augusta"}, 200)
		env.Post(key, "/breadcrumbs", map[string]any{"flavor": "page_view", "person_id": p.ID}).Want(201)
		newcomer := env.Post(key, "/breadcrumbs", map[string]any{"flavor": "page_view", "email": "new@x.test"}).Want(201).Map()
		env.Clock.Advance(env.window)
		env.run()
		reqs := wantRequests(t, rcBoth, 3)
		var crumb map[string]any
		if err := json.Unmarshal(reqs[2].Body, &crumb); err != nil {
			t.Fatalf("breadcrumb delivery body: %v", err)
		}
		if crumb["event"] != "person.created" || crumb["data"].(map[string]any)["id"] != newcomer["person_id"] {
			t.Fatalf("breadcrumb delivery %v (breadcrumb %v)", crumb, newcomer)
		}
		wantRequests(t, rcCreated, 2)
		wantRequests(t, rcUpdated, 1)
		wantRequests(t, rcForeign, 0)

		log := listOf[deliveryView](env.Env, key, "/webhooks/"+both.ID+"/deliveries")
		if log.Total != 3 || log.Items[0].PersonID != newcomer["person_id"] || log.Items[2].PersonID != p.ID || log.Items[2].Status != "succeeded" {
			t.Fatalf("delivery log %+v", log)
		}

		// A new person without custom field values (on PostgreSQL created
		// in one statement, outbox row included) fires person.created when
		// its window ends, as any creation.
		env.Clock.Advance(time.Hour)
		plain := upsertPerson(env.Env, key, map[string]any{"external_id": "e2", "email": "grace@x.test", "first_name": "Grace"}, 201)
		env.Clock.Advance(env.window - time.Millisecond)
		env.run()
		wantRequests(t, rcBoth, 3)
		env.Clock.Advance(time.Millisecond)
		env.run()
		var made map[string]any
		if err := json.Unmarshal(wantRequests(t, rcBoth, 4)[3].Body, &made); err != nil {
			t.Fatalf("creation delivery body: %v", err)
		}
		if data := made["data"].(map[string]any); made["event"] != "person.created" || data["id"] != plain.ID ||
			data["first_name"] != "Grace" || data["email"] != "grace@x.test" || data["upsert_result"] != "created" {
			t.Fatalf("creation delivery %v", made)
		}
		wantRequests(t, rcCreated, 3)
		wantRequests(t, rcUpdated, 1)
	})
}

func wantRequests(t *testing.T, rc *webhooktest.Receiver, n int) []webhooktest.Request {
	t.Helper()
	got := rc.Requests()
	if len(got) != n {
		t.Fatalf("receiver got %d requests, want %d", len(got), n)
	}
	return got
}
