package httpapi_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/internal/webhook/webhooktest"
	"github.com/pds-dev/pds/pkg/webhookverify"
)

// TestIncludeChanges: a subscription with include_changes gets, beside the
// spec's four members, the members its person.updated burst changed
// (changed and changed back: not listed) and [] for person.created; one
// without it gets exactly the four members; both are signed over the body
// as sent, and switching it off drops the member.
func TestIncludeChanges(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		rc := webhooktest.NewReceiver(t)
		env := newWebhookEnv(t, eng, webhooktest.Settings(rc))
		key := env.Key(env.NewAccount())
		var withChanges, plain subscriptionExtras
		env.Post(key, "/webhooks", map[string]any{"name": "sync", "target_url": rc.URL, "events": []string{"person.created", "person.updated"},
			"include_changes": true, "signature_scheme": "standard-webhooks"}).Want(201).JSON(&withChanges)
		env.Post(key, "/webhooks", map[string]any{"name": "plain", "target_url": rc.URL, "events": []string{"person.created", "person.updated"}}).
			Want(201).JSON(&plain)
		if !withChanges.IncludeChanges || plain.IncludeChanges {
			t.Fatalf("include_changes: %v and %v", withChanges.IncludeChanges, plain.IncludeChanges)
		}
		env.Post(key, "/custom-fields", map[string]any{"collection": "Person", "data_type": "str", "key": "plan"}).Want(201)
		env.Post(key, "/custom-fields", map[string]any{"collection": "Person", "data_type": "str", "key": "team"}).Want(201)
		tag := env.Post(key, "/tags", map[string]any{"name": "vip", "context": "person"}).Want(201).Map()["id"].(string)

		person := env.Post(key, "/persons", map[string]any{"email": "ada@example.com", "first_name": "Ada",
			"custom_fields": map[string]any{"plan": "gold", "team": "a"}}).Want(201).Map()["id"].(string)
		env.Clock.Advance(env.window)
		env.run()
		created := bodiesBySubscription(t, rc.Requests())
		wantChanges(t, created[withChanges.ID], []string{})
		wantNoChanges(t, created[plain.ID])

		// One burst: email, a tag, plan changed; first_name and team
		// changed and changed back.
		env.Patch(key, "/persons/"+person, map[string]any{"email": "ada@lovelace.name", "first_name": "Augusta",
			"custom_fields": map[string]any{"plan": "silver", "team": "b"}}).Want(200)
		env.Post(key, "/persons/"+person+"/tags", map[string]any{"tag_ids": []string{tag}}).Want(200)
		env.Patch(key, "/persons/"+person, map[string]any{"first_name": "Ada", "custom_fields": map[string]any{"team": "a"}}).Want(200)
		env.Clock.Advance(env.window)
		env.run()
		reqs := rc.Requests()
		updated := bodiesBySubscription(t, reqs[2:])
		wantChanges(t, updated[withChanges.ID], []string{"email", "tag_ids", "custom_fields.plan"})
		wantNoChanges(t, updated[plain.ID])
		for _, q := range reqs {
			if q.Header.Get(webhookverify.HeaderWebhookID) != withChanges.ID {
				continue
			}
			if err := webhookverify.VerifyStandard(q.Header, q.Body, []string{withChanges.Secret}, env.Clock.Now(), webhookverify.Options{}); err != nil {
				t.Fatalf("a body with changes does not verify: %v", err)
			}
		}

		// A burst that changes nothing tracked (f_id) lists nothing.
		env.Post(key, "/persons", map[string]any{"email": "ada@lovelace.name", "f_id": "f-1"}).Want(200)
		env.Clock.Advance(env.window)
		env.run()
		wantChanges(t, bodiesBySubscription(t, rc.Requests()[4:])[withChanges.ID], []string{})

		env.Patch(key, "/webhooks/"+withChanges.ID, map[string]any{"include_changes": false}).Want(200)
		env.Patch(key, "/persons/"+person, map[string]any{"last_name": "Lovelace"}).Want(200)
		env.Clock.Advance(env.window)
		env.run()
		wantNoChanges(t, bodiesBySubscription(t, rc.Requests()[6:])[withChanges.ID])
	})
}

// TestRateAndChangesMembers: max_per_second is 1 to 1000, 0 removes it;
// neither member may be null or of another type.
func TestRateAndChangesMembers(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		rc := webhooktest.NewReceiver(t)
		env := newWebhookEnv(t, eng, webhooktest.Settings(rc))
		key := env.Key(env.NewAccount())
		body := func(extra map[string]any) map[string]any {
			b := map[string]any{"name": "n", "target_url": rc.URL, "events": []string{"person.created"}}
			for k, v := range extra {
				b[k] = v
			}
			return b
		}
		for _, bad := range []any{1001, -1, 2.5, "50", true} {
			wantInvalid(t, env.Post(key, "/webhooks", body(map[string]any{"max_per_second": bad})).Want(400).Problem(), "/max_per_second")
		}
		wantInvalid(t, env.Post(key, "/webhooks", body(map[string]any{"include_changes": "yes"})).Want(400).Problem(), "/include_changes")
		var sub subscriptionExtras
		env.Post(key, "/webhooks", body(map[string]any{"max_per_second": 1000})).Want(201).JSON(&sub)
		if sub.MaxPerSecond != 1000 {
			t.Fatalf("max_per_second %d", sub.MaxPerSecond)
		}
		for _, member := range []string{"max_per_second", "include_changes"} {
			wantInvalid(t, env.Patch(key, "/webhooks/"+sub.ID, map[string]any{member: nil}).Want(400).Problem(), "/"+member)
		}
		var patched subscriptionExtras
		env.Patch(key, "/webhooks/"+sub.ID, map[string]any{"max_per_second": 0}).Want(200).JSON(&patched)
		if patched.MaxPerSecond != 0 {
			t.Fatalf("after 0: %d", patched.MaxPerSecond)
		}
		env.Patch(key, "/webhooks/"+sub.ID, map[string]any{"max_per_second": 1}).Want(200).JSON(&patched)
		if patched.MaxPerSecond != 1 {
			t.Fatalf("after 1: %d", patched.MaxPerSecond)
		}
	})
}

func bodiesBySubscription(t *testing.T, reqs []webhooktest.Request) map[string]map[string]json.RawMessage {
	t.Helper()
	out := map[string]map[string]json.RawMessage{}
	for _, q := range reqs {
		var body map[string]json.RawMessage
		if err := json.Unmarshal(q.Body, &body); err != nil {
			t.Fatal(err)
		}
		out[q.Header.Get(webhookverify.HeaderWebhookID)] = body
	}
	return out
}

func wantChanges(t *testing.T, body map[string]json.RawMessage, want []string) {
	t.Helper()
	var got []string
	if err := json.Unmarshal(body["changes"], &got); err != nil || got == nil || !slices.Equal(got, want) {
		t.Fatalf("changes %s, want %q (%v)", body["changes"], want, err)
	}
	if len(body) != 5 {
		t.Fatalf("body members %d, want the four and changes", len(body))
	}
}

func wantNoChanges(t *testing.T, body map[string]json.RawMessage) {
	t.Helper()
	if _, ok := body["changes"]; ok || len(body) != 4 {
		t.Fatalf("a body without include_changes has %d members, changes %s", len(body), body["changes"])
	}
}
