package httpapi_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/httpapi/apitest"
	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/internal/webhook/webhooktest"
)

// TestWebhookKeysReadNoPersonThroughTheirReceivers: a key that may write
// subscriptions but not read persons cannot have persons' data sent where
// it chooses: it may not create a subscription to person events, retarget
// one, change its events or redeliver what it carried (403 naming the
// first scope missing: persons:read, then tags:read and custom_fields:read
// for the tag names and custom values the bodies hold), and its receiver
// gets nothing. A subscription to person.deleted alone carries no person,
// so those scopes are not needed for it. Counting the failed deliveries a
// redelivery queued, and the redelivered delivery itself, are reads of
// the log: they need webhooks:read.
func TestWebhookKeysReadNoPersonThroughTheirReceivers(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		legit, attacker := webhooktest.NewReceiver(t), webhooktest.NewReceiver(t)
		env := newWebhookEnv(t, eng, webhooktest.Settings(legit, attacker))
		acc := env.NewAccount()
		admin := env.Key(acc)
		hook := createWebhook(env.Env, admin, legit.URL, "person.created", "person.updated")
		env.Post(admin, "/persons", map[string]any{"external_id": "crm-leak", "email": "leak@example.org", "first_name": "Lea"}).Want(201)
		env.Clock.Advance(env.window)
		env.run()
		delivered := wantRequests(t, legit, 1)[0]
		if !strings.Contains(string(delivered.Body), "leak@example.org") {
			t.Fatalf("the legitimate delivery: %s", delivered.Body)
		}
		log := listOf[deliveryView](env.Env, admin, "/webhooks/"+hook.ID+"/deliveries")
		delivery := log.Items[0].ID

		for _, tc := range []struct {
			scopes []domain.Scope
			lacks  domain.Scope
		}{
			{[]domain.Scope{domain.ScopeWebhooksRead, domain.ScopeWebhooksWrite}, domain.ScopePersonsRead},
			{[]domain.Scope{domain.ScopeWebhooksRead, domain.ScopeWebhooksWrite, domain.ScopePersonsRead}, domain.ScopeTagsRead},
			{[]domain.Scope{domain.ScopeWebhooksRead, domain.ScopeWebhooksWrite, domain.ScopePersonsRead, domain.ScopeTagsRead},
				domain.ScopeCustomFieldsRead},
		} {
			key := env.Key(acc, tc.scopes...)
			for _, call := range []struct {
				method, path string
				body         any
			}{
				{"POST", "/webhooks", map[string]any{"name": "mine", "target_url": attacker.URL, "events": []string{"person.updated"}}},
				{"PATCH", "/webhooks/" + hook.ID, map[string]any{"target_url": attacker.URL}},
				{"PATCH", "/webhooks/" + hook.ID, map[string]any{"events": []string{"person.created"}}},
				{"POST", "/webhooks/" + hook.ID + "/deliveries/" + delivery + "/redeliver", nil},
				{"POST", "/webhooks/" + hook.ID + "/deliveries/redeliver-failed", map[string]any{"since": "2026-01-01T00:00:00Z"}},
			} {
				res := env.Do(apitest.Request{Method: call.method, Path: call.path, Key: key, Body: call.body})
				if res.Status != 403 {
					t.Errorf("%v: %s %s answered %d %s, want 403 missing %s", tc.scopes, call.method, call.path, res.Status, res.Body, tc.lacks)
					continue
				}
				if p := res.Problem(); p.MissingScope != string(tc.lacks) {
					t.Errorf("%v: %s %s: missing %q, want %q", tc.scopes, call.method, call.path, p.MissingScope, tc.lacks)
				}
			}
		}
		env.Clock.Advance(time.Minute)
		env.run()
		wantRequests(t, attacker, 0)
		if got := listOf[deliveryView](env.Env, admin, "/webhooks/"+hook.ID+"/deliveries"); got.Total != 1 || got.Items[0].Attempts != 1 {
			t.Fatalf("the log after the refused calls: %+v", got)
		}

		// person.deleted alone carries no person: webhooks:write will do.
		writeOnly := env.Key(acc, domain.ScopeWebhooksWrite)
		deletedOnly := createWebhook(env.Env, writeOnly, attacker.URL, "person.deleted")
		env.Patch(writeOnly, "/webhooks/"+deletedOnly.ID, map[string]any{"target_url": legit.URL}).Want(200)
		if p := env.Patch(writeOnly, "/webhooks/"+deletedOnly.ID, map[string]any{"events": []string{"person.updated"}}).Want(403).Problem(); p.MissingScope != "persons:read" {
			t.Fatalf("adding a person event with webhooks:write alone: %+v", p)
		}
		// The count of what redeliver-failed queued is the log's.
		if p := env.Post(writeOnly, "/webhooks/"+deletedOnly.ID+"/deliveries/redeliver-failed",
			map[string]any{"since": "2026-01-01T00:00:00Z"}).Want(403).Problem(); p.MissingScope != "webhooks:read" {
			t.Fatalf("redeliver-failed with webhooks:write alone: %+v", p)
		}

		// Every scope the bodies reveal: allowed.
		full := env.Key(acc, domain.ScopeWebhooksRead, domain.ScopeWebhooksWrite, domain.ScopePersonsRead, domain.ScopeTagsRead,
			domain.ScopeCustomFieldsRead)
		env.Post(full, "/webhooks/"+hook.ID+"/deliveries/"+delivery+"/redeliver", nil).Want(202)
		env.Patch(full, "/webhooks/"+hook.ID, map[string]any{"target_url": legit.URL}).Want(200)
	})
}
