package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/httpapi/apitest"
	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/internal/webhook/webhooktest"
	"github.com/pds-dev/pds/pkg/webhookverify"
)

// TestErasePerson drives an erasure with suppression through the API and
// checks what real HTTPS receivers get: one signed person.deleted for the
// subscription that lists it and nothing for the others; the earlier
// delivery's log entry keeps its outcome but no longer the person; the
// suppressed identifiers refuse every write until lifted.
func TestErasePerson(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		rcDeleted, rcCreated, rcForeign := webhooktest.NewReceiver(t), webhooktest.NewReceiver(t), webhooktest.NewReceiver(t)
		env := newWebhookEnv(t, eng, webhooktest.Settings(rcDeleted, rcCreated, rcForeign))
		acc := env.NewAccount()
		key := env.Key(acc)
		writer := env.Key(acc, domain.ScopePersonsRead, domain.ScopePersonsWrite, domain.ScopeBreadcrumbsWrite)
		otherKey := env.Key(env.NewAccount())
		deleted := createWebhook(env.Env, key, rcDeleted.URL, "person.deleted")
		created := createWebhook(env.Env, key, rcCreated.URL, "person.created")
		createWebhook(env.Env, otherKey, rcForeign.URL, "person.created", "person.deleted")

		p := upsertPerson(env.Env, key, map[string]any{"external_id": "crm-erase", "email": "Erase@X.test", "first_name": "Zeb"}, 201)
		env.Post(key, "/breadcrumbs", map[string]any{"flavor": "page_view", "person_id": p.ID}).Want(201)
		env.Clock.Advance(env.window)
		env.run()
		wantRequests(t, rcCreated, 1)
		wantRequests(t, rcDeleted, 0)

		pr := env.Delete(writer, "/persons/"+p.ID).Want(403).Problem()
		if pr.MissingScope != "persons:erase" {
			t.Fatalf("a persons:write key: %+v", pr)
		}
		env.Delete(key, "/persons/"+p.ID+"?suppress=yes").Want(400)
		env.Delete(otherKey, "/persons/"+p.ID).Want(404)
		env.Get(key, "/persons/"+p.ID).Want(200)

		env.Clock.Advance(time.Minute)
		erasedAt := nowText(env.Env)
		env.Delete(key, "/persons/"+p.ID+"?suppress=true").Want(204)
		env.Get(key, "/persons/"+p.ID).Want(404)
		env.Delete(key, "/persons/"+p.ID).Want(404)
		if got := env.Get(key, "/breadcrumbs?person_id="+p.ID).Want(200).Map(); got["total"] != float64(0) {
			t.Fatalf("breadcrumbs of the erased person: %v", got)
		}

		env.run()
		wantRequests(t, rcCreated, 1)
		wantRequests(t, rcForeign, 0)
		got := wantRequests(t, rcDeleted, 1)[0]
		var body map[string]any
		if err := json.Unmarshal(got.Body, &body); err != nil {
			t.Fatal(err)
		}
		data, _ := body["data"].(map[string]any)
		if keysOf(body) != deliveryKeys || body["event"] != "person.deleted" || keysOf(data) != "date_deleted,id" ||
			data["id"] != p.ID || data["date_deleted"] != erasedAt || got.Header.Get("Service-Event") != "person.deleted" {
			t.Fatalf("person.deleted delivery %s", got.Body)
		}
		if err := webhookverify.Verify(got.Header, got.Body, []string{deleted.Secret}, env.Clock.Now(), webhookverify.Options{}); err != nil {
			t.Fatalf("verify: %v", err)
		}
		doc, err := apitest.Document()
		if err != nil {
			t.Fatal(err)
		}
		if err := doc.Components.Schemas["DeliveryBody"].Value.VisitJSON(body, openapi3.EnableJSONSchema2020()); err != nil {
			t.Fatalf("the delivery does not match the contract's DeliveryBody: %v", err)
		}

		// The earlier delivery keeps its outcome, not the person.
		log := listOf[deliveryView](env.Env, key, "/webhooks/"+created.ID+"/deliveries")
		if log.Total != 1 || log.Items[0].Status != "succeeded" {
			t.Fatalf("log %+v", log)
		}
		detail := env.Get(key, "/webhooks/"+created.ID+"/deliveries/"+log.Items[0].ID).Want(200)
		if strings.Contains(string(detail.Body), "rase@x.test") || strings.Contains(string(detail.Body), "Zeb") ||
			strings.Contains(string(detail.Body), "Service-Signature") || !strings.Contains(string(detail.Body), "Pds-Erased") {
			t.Fatalf("delivery after erasure: %s", detail.Body)
		}

		// Suppressed: every write naming the identifiers is refused.
		for _, w := range []struct {
			path    string
			body    map[string]any
			pointer string
		}{
			{"/persons", map[string]any{"email": "ERASE@x.test"}, "/email"},
			{"/persons", map[string]any{"external_id": "crm-erase", "first_name": "Again"}, "/external_id"},
			{"/breadcrumbs", map[string]any{"flavor": "page_view", "email": "erase@x.test"}, "/email"},
		} {
			pr := env.Post(writer, w.path, w.body).Want(409).Problem()
			if pr.Type != domain.SuppressedProblemType || len(pr.Errors) != 1 || pr.Errors[0].Pointer != w.pointer {
				t.Fatalf("%s %v: %+v", w.path, w.body, pr)
			}
		}
		batch := env.Post(writer, "/persons/batch", map[string]any{"persons": []map[string]any{
			{"external_id": "crm-fresh"}, {"external_id": "crm-erase"}}}).Want(200).Map()
		results := batch["results"].([]any)
		if results[0].(map[string]any)["status"] != float64(201) || results[1].(map[string]any)["status"] != float64(409) ||
			results[1].(map[string]any)["problem"].(map[string]any)["type"] != domain.SuppressedProblemType {
			t.Fatalf("batch %v", batch)
		}
		upsertPerson(env.Env, otherKey, map[string]any{"email": "erase@x.test"}, 201)

		env.Get(writer, "/suppressions").Want(403)
		var sups struct {
			Items []struct {
				ID, Kind, Hash, Created, KeyID string
			} `json:"items"`
			Total int `json:"total"`
		}
		list := env.Get(key, "/suppressions").Want(200)
		list.JSON(&sups)
		if sups.Total != 2 || strings.Contains(strings.ToLower(string(list.Body)), "erase@") || strings.Contains(string(list.Body), "crm-erase") {
			t.Fatalf("suppressions %s", list.Body)
		}
		env.Delete(otherKey, "/suppressions/"+sups.Items[0].ID).Want(404)
		for _, s := range sups.Items {
			env.Delete(key, "/suppressions/"+s.ID).Want(204)
			env.Delete(key, "/suppressions/"+s.ID).Want(404)
		}
		upsertPerson(env.Env, writer, map[string]any{"external_id": "crm-erase", "email": "erase@x.test"}, 201)
	})
}
