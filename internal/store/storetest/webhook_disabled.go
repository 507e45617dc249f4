package storetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// testWebhookDisabled: a failure streak that deactivates a subscription
// makes, in the same transaction, one webhook.disabled delivery about it,
// due at once and about no person, for each other active subscription of
// the account that lists the event; none for a subscription that does not
// list it, an inactive one or another account's; and a later failure of
// the already inactive subscription tells nobody again.
func testWebhookDisabled(t *testing.T, newStore NewStore) {
	ctx := context.Background()
	st := newStore(t)
	acc, other := NewAccount(t, st), NewAccount(t, st)
	failing := newWebhook(t, st, acc, domain.EventPersonCreated, domain.EventPersonUpdated)
	listener := newWebhook(t, st, acc, domain.EventWebhookDisabled)
	deaf := newWebhook(t, st, acc, domain.EventPersonDeleted)
	asleep := newWebhook(t, st, acc, domain.EventWebhookDisabled)
	foreign := newWebhook(t, st, other, domain.EventWebhookDisabled)
	off := false
	if _, err := st.UpdateWebhook(ctx, acc, asleep.ID, domain.WebhookUpdate{IsActive: &off}, Epoch); err != nil {
		t.Fatal(err)
	}

	at := Epoch.Add(time.Hour)
	first := queueDelivery(t, st, failing, at)
	queueDelivery(t, st, failing, at)
	jobs, err := st.ClaimDeliveries(ctx, at, time.Minute, 10)
	if err != nil || len(jobs) != 2 {
		t.Fatalf("claimed %d, %v", len(jobs), err)
	}
	msg := "HTTP 404 Not Found: not retried"
	var done []store.FinishedAttempt
	for _, job := range jobs {
		done = append(done, store.FinishedAttempt{Job: job, Result: store.AttemptResult{
			Attempt: domain.DeliveryAttempt{AttemptedAt: at, StatusCode: statusCode(404)}, Status: domain.DeliveryFailed, Error: &msg,
			Deactivate: func(time.Time, int) bool { return true },
		}})
	}
	// Both failures in one batch: the first deactivates, the second finds
	// the subscription inactive already.
	if err := st.FinishAttempts(ctx, done); err != nil {
		t.Fatal(err)
	}
	page := domain.PageRequest{Page: 1, Size: 10}
	told, n, err := st.ListDeliveries(ctx, acc, listener.ID, domain.DeliveryFilter{}, page)
	if err != nil || n != 1 {
		t.Fatalf("the listener has %d deliveries, %v; want 1", n, err)
	}
	d := told[0]
	if d.Event != domain.EventWebhookDisabled || d.PersonID != "" || d.Status != domain.DeliveryPending ||
		d.NextAttemptAt == nil || d.NextAttemptAt.After(at) {
		t.Fatalf("webhook.disabled delivery %+v", d)
	}
	full, _, err := st.GetDelivery(ctx, acc, listener.ID, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		ID    string                     `json:"id"`
		Event string                     `json:"event"`
		Data  domain.WebhookDisabledData `json:"data"`
	}
	if err := json.Unmarshal(full.Body, &body); err != nil {
		t.Fatal(err)
	}
	if body.ID != d.ID || body.Data.ID != failing.ID || body.Data.Name != failing.Name || body.Data.TargetURL != failing.TargetURL ||
		body.Data.LastError == nil || *body.Data.LastError != msg || body.Data.DateDisabled != domain.T(at) {
		t.Fatalf("body %s", full.Body)
	}
	for _, w := range []domain.Webhook{deaf, asleep, failing} {
		if _, n, err := st.ListDeliveries(ctx, acc, w.ID, domain.DeliveryFilter{Event: domain.EventWebhookDisabled}, page); err != nil || n != 0 {
			t.Fatalf("%s got %d webhook.disabled deliveries, %v", w.ID, n, err)
		}
	}
	if _, n, err := st.ListDeliveries(ctx, other, foreign.ID, domain.DeliveryFilter{}, page); err != nil || n != 0 {
		t.Fatalf("another account heard of it: %d, %v", n, err)
	}
	if got, _, err := st.GetDelivery(ctx, acc, failing.ID, first.ID); err != nil || got.Status != domain.DeliveryFailed {
		t.Fatalf("the failing delivery %+v, %v", got, err)
	}
	b, err := st.WebhookBacklog(ctx, at)
	if err != nil || b.Inactive[domain.DisabledFailures] != 1 || b.Inactive[domain.DisabledManual] != 1 || b.Inactive[domain.DisabledGone] != 0 {
		t.Fatalf("inactive by reason %v, %v", b.Inactive, err)
	}
}
