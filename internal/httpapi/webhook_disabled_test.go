package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/internal/webhook/webhooktest"
	"github.com/pds-dev/pds/pkg/webhookverify"
)

// TestWebhookDisabledEvent: when pds retires a subscription (its target
// answered 410), every other active subscription of the account that lists
// webhook.disabled gets one delivery describing it, logged without a
// person; one that does not list it gets nothing new, nor does another
// account, nor an owner's own switch-off; the gauge counts it as gone.
func TestWebhookDisabledEvent(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		gone, ops, plain := webhooktest.NewReceiver(t), webhooktest.NewReceiver(t), webhooktest.NewReceiver(t)
		gone.Always(http.StatusGone)
		env := newWebhookEnv(t, eng, webhooktest.Settings(gone))
		key := env.Key(env.NewAccount())
		other := env.Key(env.NewAccount())

		retired := createWebhook(env.Env, key, gone.URL, "person.created")
		listener := createWebhook(env.Env, key, ops.URL, "webhook.disabled")
		deaf := createWebhook(env.Env, key, plain.URL, "person.updated")
		manual := createWebhook(env.Env, key, plain.URL, "person.updated")
		createWebhook(env.Env, other, ops.URL, "webhook.disabled")

		// An owner's switch-off tells nobody.
		env.Patch(key, "/webhooks/"+manual.ID, map[string]any{"is_active": false}).Want(200)
		env.touch(key, "p1")
		env.Clock.Advance(env.window)
		env.run()
		env.run()

		reqs := ops.Requests()
		if len(reqs) != 1 {
			t.Fatalf("the listener got %d deliveries, want 1", len(reqs))
		}
		if err := webhookverify.Verify(reqs[0].Header, reqs[0].Body, []string{listener.Secret}, env.Clock.Now(), webhookverify.Options{}); err != nil {
			t.Fatalf("the webhook.disabled delivery does not verify: %v", err)
		}
		var body struct {
			Event string         `json:"event"`
			Data  map[string]any `json:"data"`
		}
		if err := json.Unmarshal(reqs[0].Body, &body); err != nil {
			t.Fatal(err)
		}
		if body.Event != "webhook.disabled" || body.Data["id"] != retired.ID || body.Data["name"] != retired.Name ||
			body.Data["target_url"] != gone.URL || body.Data["last_error"] == nil || body.Data["date_disabled"] == nil || len(body.Data) != 5 {
			t.Fatalf("body %s", reqs[0].Body)
		}
		if n := len(plain.Requests()); n != 0 {
			t.Fatalf("subscriptions that do not list webhook.disabled got %d deliveries", n)
		}
		_ = deaf

		var log struct {
			Items []struct {
				Event    string  `json:"event"`
				PersonID *string `json:"person_id"`
				Status   string  `json:"status"`
			} `json:"items"`
		}
		env.Get(key, "/webhooks/"+listener.ID+"/deliveries").Want(200).JSON(&log)
		if len(log.Items) != 1 || log.Items[0].PersonID != nil || log.Items[0].Event != "webhook.disabled" || log.Items[0].Status != "succeeded" {
			t.Fatalf("the listener's log %+v", log.Items)
		}
		env.Get(key, "/webhooks/"+listener.ID+"/deliveries?event=webhook.disabled").Want(200)

		b, err := env.Store.WebhookBacklog(context.Background(), env.Clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		if b.Inactive["gone"] < 1 || b.Inactive["manual"] < 1 {
			t.Fatalf("inactive by reason %v", b.Inactive)
		}

		// Reactivated and retired again: told again, once.
		env.Patch(key, "/webhooks/"+retired.ID, map[string]any{"is_active": true}).Want(200)
		env.touch(key, "p2")
		env.Clock.Advance(env.window)
		env.run()
		env.run()
		if n := len(ops.Requests()); n != 2 {
			t.Fatalf("after a second retirement the listener has %d deliveries, want 2", n)
		}
	})
}
