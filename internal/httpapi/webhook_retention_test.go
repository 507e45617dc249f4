package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/internal/webhook"
	"github.com/pds-dev/pds/internal/webhook/webhooktest"
)

// TestDeliveryLogRetention: the worker deletes a finished delivery once the
// retention (default 30 days) has passed since its last attempt, at its
// next hourly pruning; the log then no longer lists it and getting it is a
// 404. Another account's younger delivery stays.
func TestDeliveryLogRetention(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		rc := webhooktest.NewReceiver(t)
		rc.Always(http.StatusOK)
		env := newWebhookEnv(t, eng, webhooktest.Settings(rc))
		key := env.Key(env.NewAccount())
		otherKey := env.Key(env.NewAccount())
		hook := createWebhook(env.Env, key, rc.URL, "person.created")
		otherHook := createWebhook(env.Env, otherKey, rc.URL, "person.created")
		base := "/webhooks/" + hook.ID + "/deliveries"

		env.touch(key, "p1")
		env.Clock.Advance(env.window)
		env.run() // delivered now; this first pass also prunes (nothing yet)
		log := listOf[deliveryView](env.Env, key, base)
		if log.Total != 1 || log.Items[0].Status != "succeeded" {
			t.Fatalf("log before retention %+v", log)
		}
		id := log.Items[0].ID
		wantNotFound(t, env.Get(otherKey, base+"/"+id), "webhook", hook.ID)

		// Exactly the retention after the attempt: not older than it yet.
		env.Clock.Advance(webhook.DefaultRetention)
		env.run()
		env.Get(key, base+"/"+id).Want(200)
		env.touch(otherKey, "p2")

		// Past the retention, but the last pruning was under an hour ago.
		env.Clock.Advance(30 * time.Minute)
		env.run() // also delivers the other account's change
		env.Get(key, base+"/"+id).Want(200)

		env.Clock.Advance(30 * time.Minute)
		env.run()
		if log := listOf[deliveryView](env.Env, key, base); log.Total != 0 || len(log.Items) != 0 {
			t.Fatalf("log after retention %+v", log)
		}
		wantNotFound(t, env.Get(key, base+"/"+id), "delivery", id)
		if other := listOf[deliveryView](env.Env, otherKey, "/webhooks/"+otherHook.ID+"/deliveries"); other.Total != 1 {
			t.Fatalf("the other account's younger delivery was pruned: %+v", other)
		}
		if logs := env.logs.String(); !strings.Contains(logs, "webhook deliveries pruned") || !strings.Contains(logs, "deleted=1") {
			t.Fatalf("pruning was not logged:\n%s", logs)
		}
	})
}
