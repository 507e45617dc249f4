package httpapi_test

import (
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/internal/webhook/webhooktest"
)

// TestDeliveryLogFilters: the log's filters combine, total counts what
// they let through, and a bad filter is a 400 naming it.
func TestDeliveryLogFilters(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rc := webhooktest.NewReceiver(t)
		rc.Always(http.StatusNoContent)
		env := newWebhookEnv(t, eng, webhooktest.Settings(rc))
		key := env.Key(env.NewAccount())
		otherKey := env.Key(env.NewAccount())
		hook := createWebhook(env.Env, key, rc.URL, "person.created", "person.updated")
		base := "/webhooks/" + hook.ID + "/deliveries"
		deliver := func(status int, externalIDs ...string) []string {
			rc.Always(status)
			var persons []string
			for _, id := range externalIDs {
				persons = append(persons, env.touch(key, id))
			}
			env.Clock.Advance(env.window)
			env.run()
			env.Clock.Advance(time.Hour)
			return persons
		}
		p1 := deliver(http.StatusNoContent, "p1")[0]          // created, succeeded
		p2 := deliver(http.StatusNotFound, "p1", "p2")[1]     // p1 updated and p2 created, both failed
		p3 := deliver(http.StatusServiceUnavailable, "p3")[0] // created, pending a retry
		all := listOf[deliveryView](env.Env, key, base)
		of := map[string]deliveryView{}
		for _, d := range all.Items {
			of[d.PersonID+" "+d.Event] = d
		}
		p1Created, p1Updated := of[p1+" person.created"], of[p1+" person.updated"]
		p2Created, pending := of[p2+" person.created"], of[p3+" person.created"]
		if all.Total != 4 || p1Created.Status != "succeeded" || p1Updated.Status != "failed" || p2Created.Status != "failed" ||
			pending.Status != "pending" || all.Items[0].ID != pending.ID || all.Items[3].ID != p1Created.ID {
			t.Fatalf("log %+v", all)
		}
		failedAt := url.QueryEscape(p2Created.Created)

		for _, tc := range []struct {
			query string
			want  []deliveryView
		}{
			{"status=failed", all.Items[1:3]},
			{"status=failed&event=person.created", []deliveryView{p2Created}},
			{"event=person.updated", []deliveryView{p1Updated}},
			{"person_id=" + p1, []deliveryView{p1Updated, p1Created}},
			{"status=pending&person_id=" + p1, nil},
			{"since=" + failedAt + "&until=" + failedAt, all.Items[1:3]},
			{"until=" + url.QueryEscape(p1Created.Created), []deliveryView{p1Created}},
			{"since=" + url.QueryEscape(pending.Created) + "&status=pending", []deliveryView{pending}},
			{"person_id=per_nobody", nil},
		} {
			got := listOf[deliveryView](env.Env, key, base+"?"+tc.query)
			if got.Total != len(tc.want) || !slices.EqualFunc(got.Items, tc.want, func(a, b deliveryView) bool { return a.ID == b.ID }) {
				t.Errorf("%s: %+v, want %+v", tc.query, got, tc.want)
			}
		}

		for _, tc := range []struct{ query, parameter string }{
			{"status=done", "status"},
			{"status=failed&status=pending", "status"},
			{"event=person.deleted", "event"},
			{"person_id=", "person_id"},
			{"since=yesterday", "since"},
			{"until=2026-11-21", "until"},
			{"since=2026-11-22T00:00:00Z&until=2026-11-21T00:00:00Z", "since"},
			{"state=failed", "state"},
		} {
			wantInvalid(t, env.Get(key, base+"?"+tc.query).Want(400).Problem(), tc.parameter)
		}
		wantNotFound(t, env.Get(otherKey, base+"?status=failed"), "webhook", hook.ID)
	})
}
