package httpapi_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/pds-dev/pds/internal/httpapi/apitest"
	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/internal/webhook/webhooktest"
)

// notFoundBody is a 404 body without its request_id (different on every
// request), with the id it names replaced by a placeholder.
func notFoundBody(t *testing.T, res *apitest.Response, id string) map[string]any {
	t.Helper()
	res.Want(http.StatusNotFound)
	var m map[string]any
	if err := json.Unmarshal(res.Body, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "request_id")
	if d, ok := m["detail"].(string); ok {
		m["detail"] = strings.ReplaceAll(d, id, "<id>")
	}
	return m
}

// TestForeignWebhookIDsLookAbsent: every webhook operation answers another
// account's subscription or delivery with the very body it gives for an id
// that does not exist (decisions.md section 2), so ids cannot be probed.
func TestForeignWebhookIDsLookAbsent(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		rc := webhooktest.NewReceiver(t)
		env := newWebhookEnv(t, eng, webhooktest.Settings(rc))
		key, otherKey := env.Key(env.NewAccount()), env.Key(env.NewAccount())
		foreign := createWebhook(env.Env, otherKey, rc.URL, "person.created")
		env.touch(otherKey, "p1")
		env.Clock.Advance(env.window)
		env.run()
		foreignDelivery := listOf[deliveryView](env.Env, otherKey, "/webhooks/"+foreign.ID+"/deliveries").Items[0].ID
		mine := createWebhook(env.Env, key, rc.URL, "person.created")
		const absentHook, absentDelivery = "wh_absent", "0123456789abcdef0123456789abcdef"

		ops := []struct{ method, path, body string }{
			{"GET", "/webhooks/{h}", ""},
			{"PATCH", "/webhooks/{h}", `{"name":"x"}`},
			{"DELETE", "/webhooks/{h}", ""},
			{"POST", "/webhooks/{h}/rotate-secret", ""},
			{"GET", "/webhooks/{h}/deliveries", ""},
			{"GET", "/webhooks/{h}/deliveries/{d}", ""},
			{"POST", "/webhooks/{h}/deliveries/{d}/redeliver", ""},
			{"POST", "/webhooks/{h}/deliveries/redeliver-failed", `{"since":"2026-01-01T00:00:00Z"}`},
		}
		do := func(method, path, body, hook, delivery string) *apitest.Response {
			path = strings.NewReplacer("{h}", hook, "{d}", delivery).Replace(path)
			return env.Do(apitest.Request{Method: method, Path: path, Key: key, Body: body})
		}
		for _, op := range ops {
			got := notFoundBody(t, do(op.method, op.path, op.body, foreign.ID, foreignDelivery), foreign.ID)
			want := notFoundBody(t, do(op.method, op.path, op.body, absentHook, absentDelivery), absentHook)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s %s: foreign subscription %v, absent %v", op.method, op.path, got, want)
			}
			if !strings.Contains(op.path, "{d}") {
				continue
			}
			// The caller's own subscription with another account's delivery.
			got = notFoundBody(t, do(op.method, op.path, op.body, mine.ID, foreignDelivery), foreignDelivery)
			want = notFoundBody(t, do(op.method, op.path, op.body, mine.ID, absentDelivery), absentDelivery)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s %s: foreign delivery %v, absent %v", op.method, op.path, got, want)
			}
		}
		if w := env.Get(otherKey, "/webhooks/"+foreign.ID).Want(200).Map(); w["name"] != "crm sync" {
			t.Fatalf("the foreign subscription changed: %v", w)
		}
	})
}
