package httpapi_test

import (
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/internal/webhook/webhooktest"
)

// TestDeliveryLogFilters: the log's filters combine, total counts what
// they let through, and a bad filter is a 400 naming it.
func TestDeliveryLogFilters(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
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
			{"event=person.exploded", "event"},
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

// TestRedeliverFailed: every failed delivery since a time is queued again,
// as many as the log counts, and sent again under its id.
func TestRedeliverFailed(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		rc := webhooktest.NewReceiver(t)
		env := newWebhookEnv(t, eng, webhooktest.Settings(rc))
		acc := env.NewAccount()
		key := env.Key(acc)
		readKey := env.Key(acc, domain.ScopeWebhooksRead)
		otherKey := env.Key(env.NewAccount())
		hook := createWebhook(env.Env, key, rc.URL, "person.created")
		base := "/webhooks/" + hook.ID + "/deliveries"
		deliver := func(status int, externalID string) {
			rc.Always(status)
			env.touch(key, externalID)
			env.Clock.Advance(env.window)
			env.run()
			env.Clock.Advance(time.Hour)
		}
		deliver(http.StatusNotFound, "p1") // failed, before since
		since := env.Clock.Now()
		deliver(http.StatusNotFound, "p2")
		deliver(http.StatusBadRequest, "p3")
		deliver(http.StatusNoContent, "p4")
		body := map[string]any{"since": since.Format(time.RFC3339)}

		preview := listOf[deliveryView](env.Env, key, base+"?status=failed&since="+url.QueryEscape(since.Format(time.RFC3339)))
		wantInvalid(t, env.Post(key, base+"/redeliver-failed", nil).Want(400).Problem())
		for _, bad := range []map[string]any{{}, {"since": nil}, {"since": "yesterday"}, {"since": "2026-11-21"}} {
			wantInvalid(t, env.Post(key, base+"/redeliver-failed", bad).Want(400).Problem(), "/since")
		}
		wantInvalid(t, env.Post(key, base+"/redeliver-failed", map[string]any{"since": since, "until": since}).Want(400).Problem())
		wantNotFound(t, env.Post(otherKey, base+"/redeliver-failed", body), "webhook", hook.ID)
		if p := env.Post(readKey, base+"/redeliver-failed", body).Want(403).Problem(); p.MissingScope != "webhooks:write" {
			t.Fatalf("403 %+v", p)
		}
		if n := listOf[deliveryView](env.Env, key, base+"?status=failed").Total; n != 3 {
			t.Fatalf("a refused call changed the log: %d failed, want 3", n)
		}

		var got struct {
			Redelivered int `json:"redelivered"`
		}
		rc.Always(http.StatusNoContent)
		env.Post(key, base+"/redeliver-failed", body).Want(202).JSON(&got)
		if preview.Total != 2 || got.Redelivered != preview.Total {
			t.Fatalf("redelivered %d, the log counted %d; want 2", got.Redelivered, preview.Total)
		}
		queued := listOf[deliveryView](env.Env, key, base+"?status=pending")
		if queued.Total != 2 || queued.Items[0].ID != preview.Items[0].ID || queued.Items[1].ID != preview.Items[1].ID {
			t.Fatalf("pending %+v, want %+v", queued, preview)
		}
		sent := len(rc.Requests())
		env.run()
		reqs := rc.Requests()[sent:]
		if len(reqs) != 2 {
			t.Fatalf("%d requests after the redelivery, want 2", len(reqs))
		}
		for _, d := range preview.Items {
			var detail deliveryView
			env.Get(key, base+"/"+d.ID).Want(200).JSON(&detail)
			if detail.Status != "succeeded" || detail.Attempts != 2 || len(detail.AttemptLog) != 2 {
				t.Fatalf("after the redelivery %+v", detail)
			}
			// The log shows the headers of each attempt as it was sent.
			for _, req := range reqs {
				if req.Header.Get("Service-Delivery-Id") != d.ID {
					continue
				}
				for _, name := range []string{"Content-Type", "User-Agent", "Service-Webhook-Id", "Service-Delivery-Id",
					"Service-Event", "Service-Timestamp"} {
					if got := detail.AttemptLog[1].RequestHeaders[name]; got == "" || got != req.Header.Get(name) {
						t.Errorf("the log shows %s %q, the receiver got %q", name, got, req.Header.Get(name))
					}
				}
				// The signature with its time and scheme, but not a value
				// that a reader of the log could replay the delivery with.
				want := "t=" + req.Header.Get("Service-Timestamp") + ",v1=…redacted"
				if got := detail.AttemptLog[1].RequestHeaders["Service-Signature"]; got != want {
					t.Errorf("the log shows Service-Signature %q, want %q (the receiver got %q)", got, want, req.Header.Get("Service-Signature"))
				}
			}
		}
		if n := listOf[deliveryView](env.Env, key, base+"?status=failed").Total; n != 1 {
			t.Fatalf("%d failed after the redelivery, want the one before since", n)
		}

		env.Patch(key, "/webhooks/"+hook.ID, map[string]any{"is_active": false}).Want(200)
		if p := env.Post(key, base+"/redeliver-failed", body).Want(409).Problem(); p.Detail == "" {
			t.Fatalf("409 %+v", p)
		}
	})
}
