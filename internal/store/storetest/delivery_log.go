package storetest

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// loggedDelivery makes a delivery of w created at `at` for event and
// person, and records one attempt at `at` that leaves it with status
// (pending: none). Nothing else may be due at `at`.
func loggedDelivery(t testing.TB, st store.Store, w domain.Webhook, at time.Time, event, person, status string) domain.Delivery {
	t.Helper()
	d := queueDeliveryEdited(t, st, w, at, func(d *domain.Delivery) { d.Event, d.PersonID = event, person })
	if status != domain.DeliveryPending {
		finishClaimed(t, st, claimOneDelivery(t, st, at), at, status)
		d.Status = status
	}
	return d
}

func sameTime(a, b *time.Time) bool {
	return (a == nil) == (b == nil) && (a == nil || a.Equal(*b))
}

// deliveryIDs are the ids of ds, in order.
func deliveryIDs(ds []domain.Delivery) []string {
	ids := make([]string, len(ds))
	for i, d := range ds {
		ids[i] = d.ID
	}
	return ids
}

func testDeliveryLog(t *testing.T, newStore NewStore) {
	ctx := context.Background()
	st := newStore(t)
	acc, other := NewAccount(t, st), NewAccount(t, st)
	w, sibling, foreign := newWebhook(t, st, acc), newWebhook(t, st, acc), newWebhook(t, st, other)
	created, updated := domain.EventPersonCreated, domain.EventPersonUpdated
	pending, succeeded, failed := domain.DeliveryPending, domain.DeliverySucceeded, domain.DeliveryFailed
	at := func(i int) time.Time { return Epoch.Add(time.Duration(i) * time.Minute) }

	// Oldest first; the pending ones last, so that no claim takes them.
	var log []domain.Delivery
	for i, d := range []struct{ event, person, status string }{
		{created, "per_a", failed},
		{updated, "per_b", succeeded},
		{updated, "per_a", failed},
		{created, "per_c", succeeded},
		{updated, "per_b", failed},
		{created, "per_a", pending},
		{updated, "per_c", pending},
	} {
		log = append(log, loggedDelivery(t, st, w, at(i), d.event, d.person, d.status))
	}
	// Deliveries of the same person and kinds elsewhere, which no filter of
	// w's log may show.
	loggedDelivery(t, st, sibling, at(7), created, "per_a", pending)
	loggedDelivery(t, st, foreign, at(8), created, "per_a", pending)
	newestFirst := slices.Clone(log)
	slices.Reverse(newestFirst)

	since, until := at(2), at(4)
	for _, tc := range []struct {
		name string
		f    domain.DeliveryFilter
		want func(d domain.Delivery) bool
	}{
		{"none", domain.DeliveryFilter{}, func(domain.Delivery) bool { return true }},
		{"status", domain.DeliveryFilter{Status: failed}, func(d domain.Delivery) bool { return d.Status == failed }},
		{"event", domain.DeliveryFilter{Event: updated}, func(d domain.Delivery) bool { return d.Event == updated }},
		{"person", domain.DeliveryFilter{PersonID: "per_a"}, func(d domain.Delivery) bool { return d.PersonID == "per_a" }},
		{"status and event", domain.DeliveryFilter{Status: failed, Event: created},
			func(d domain.Delivery) bool { return d.Status == failed && d.Event == created }},
		{"status and person", domain.DeliveryFilter{Status: pending, PersonID: "per_c"},
			func(d domain.Delivery) bool { return d.Status == pending && d.PersonID == "per_c" }},
		{"since and until, inclusive", domain.DeliveryFilter{Since: &since, Until: &until},
			func(d domain.Delivery) bool { return !d.CreatedAt.Before(since) && !d.CreatedAt.After(until) }},
		{"since a moment after a delivery", domain.DeliveryFilter{Since: new(since.Add(time.Nanosecond))},
			func(d domain.Delivery) bool { return d.CreatedAt.After(since) }},
		{"until a moment after a delivery", domain.DeliveryFilter{Until: new(until.Add(999 * time.Microsecond))},
			func(d domain.Delivery) bool { return !d.CreatedAt.After(until) }},
		{"status since", domain.DeliveryFilter{Status: failed, Since: &since},
			func(d domain.Delivery) bool { return d.Status == failed && !d.CreatedAt.Before(since) }},
		{"everything", domain.DeliveryFilter{Status: failed, Event: updated, PersonID: "per_b", Since: &since, Until: &until},
			func(d domain.Delivery) bool { return d.ID == log[4].ID }},
		{"a person of another subscription only", domain.DeliveryFilter{PersonID: "per_z"}, func(domain.Delivery) bool { return false }},
	} {
		want := deliveryIDs(slices.DeleteFunc(slices.Clone(newestFirst), func(d domain.Delivery) bool { return !tc.want(d) }))
		got, total, err := st.ListDeliveries(ctx, acc, w.ID, tc.f, domain.PageRequest{Page: 1, Size: 10})
		if err != nil || total != len(want) || !slices.Equal(deliveryIDs(got), want) {
			t.Errorf("%s: %v of %d, %v; want %v", tc.name, deliveryIDs(got), total, err, want)
		}
	}

	t.Run("paged, from either end", func(t *testing.T) {
		for page := 1; page <= 5; page++ {
			got, total, err := st.ListDeliveries(ctx, acc, w.ID, domain.DeliveryFilter{}, domain.PageRequest{Page: page, Size: 2})
			want := deliveryIDs(newestFirst[min(2*(page-1), len(log)):min(2*page, len(log))])
			if err != nil || total != len(log) || !slices.Equal(deliveryIDs(got), want) {
				t.Errorf("page %d: %v of %d, %v; want %v", page, deliveryIDs(got), total, err, want)
			}
		}
	})

	t.Run("a log reads back what was recorded", func(t *testing.T) {
		got, _, err := st.ListDeliveries(ctx, acc, w.ID, domain.DeliveryFilter{PersonID: "per_b", Status: failed}, domain.PageRequest{Page: 1, Size: 10})
		if err != nil || len(got) != 1 {
			t.Fatalf("%+v, %v", got, err)
		}
		if d := got[0]; d.Event != updated || d.PersonID != "per_b" || d.AccountID != acc || d.WebhookID != w.ID || d.Attempts != 1 ||
			*d.LastStatusCode != 404 || !d.CreatedAt.Equal(at(4)) {
			t.Fatalf("read back %+v", d)
		}
	})

	t.Run("another account sees nothing", func(t *testing.T) {
		_, _, err := st.ListDeliveries(ctx, other, w.ID, domain.DeliveryFilter{Status: failed}, domain.PageRequest{Page: 1, Size: 10})
		wantNotFound(t, "another account's subscription", err)
		got, total, err := st.ListDeliveries(ctx, other, foreign.ID, domain.DeliveryFilter{PersonID: "per_a"}, domain.PageRequest{Page: 1, Size: 10})
		if err != nil || total != 1 || len(got) != 1 || got[0].WebhookID != foreign.ID {
			t.Fatalf("the other account's own log: %+v of %d, %v", got, total, err)
		}
	})
}

func testRedeliverFailed(t *testing.T, newStore NewStore) {
	ctx := context.Background()
	st := newStore(t)
	acc, other := NewAccount(t, st), NewAccount(t, st)
	w, sibling, foreign := newWebhook(t, st, acc), newWebhook(t, st, acc), newWebhook(t, st, other)
	at := func(i int) time.Time { return Epoch.Add(time.Duration(i) * time.Minute) }
	created := domain.EventPersonCreated
	before := loggedDelivery(t, st, w, at(0), created, "per_a", domain.DeliveryFailed)
	atSince := loggedDelivery(t, st, w, at(1), created, "per_b", domain.DeliveryFailed)
	after := loggedDelivery(t, st, w, at(2), domain.EventPersonUpdated, "per_a", domain.DeliveryFailed)
	succeeded := loggedDelivery(t, st, w, at(3), created, "per_c", domain.DeliverySucceeded)
	siblings := loggedDelivery(t, st, sibling, at(4), created, "per_a", domain.DeliveryFailed)
	foreigns := loggedDelivery(t, st, foreign, at(5), created, "per_a", domain.DeliveryFailed)
	// Cancelled (failed) while its attempt is in flight, under a lease that
	// holds past now: the subscription is switched off and on again.
	inFlight := queueDelivery(t, st, w, at(6))
	claimOneDelivery(t, st, at(6))
	off, on := false, true
	for _, active := range []*bool{&off, &on} {
		if _, err := st.UpdateWebhook(ctx, acc, w.ID, domain.WebhookUpdate{IsActive: active}, at(6)); err != nil {
			t.Fatal(err)
		}
	}
	pending := queueDelivery(t, st, w, at(7))
	rotated, _, err := st.RotateWebhookSecret(ctx, acc, w.ID, "whsec_rotated", at(7), at(8))
	if err != nil {
		t.Fatal(err)
	}
	since, now := at(1), at(6).Add(10*time.Second)

	read := func(d domain.Delivery) *domain.Delivery {
		t.Helper()
		got, _, err := st.GetDelivery(ctx, d.AccountID, d.WebhookID, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	unchanged := func(ds ...domain.Delivery) map[string]domain.Delivery {
		t.Helper()
		out := map[string]domain.Delivery{}
		for _, d := range ds {
			out[d.ID] = *read(d)
		}
		return out
	}
	wantUnchanged := func(what string, was map[string]domain.Delivery) {
		t.Helper()
		for id, d := range was {
			if got := read(d); got.Status != d.Status || got.Attempts != d.Attempts || got.RoundStart != d.RoundStart ||
				!sameTime(got.NextAttemptAt, d.NextAttemptAt) {
				t.Errorf("%s: delivery %s changed: %+v, was %+v", what, id, got, d)
			}
		}
	}
	left := unchanged(before, succeeded, siblings, foreigns, inFlight, pending)

	t.Run("another account's key changes nothing", func(t *testing.T) {
		_, err := st.RedeliverFailed(ctx, other, w.ID, since, now)
		wantNotFound(t, "another account's subscription", err)
		_, err = st.RedeliverFailed(ctx, acc, "wh_absent", since, now)
		wantNotFound(t, "an absent subscription", err)
		wantUnchanged("after a refused call", unchanged(atSince, after))
	})

	t.Run("an inactive subscription is refused and changes nothing", func(t *testing.T) {
		if _, err := st.UpdateWebhook(ctx, acc, sibling.ID, domain.WebhookUpdate{IsActive: &off}, now); err != nil {
			t.Fatal(err)
		}
		var ce *domain.ConflictError
		if _, err := st.RedeliverFailed(ctx, acc, sibling.ID, at(0), now); !errors.As(err, &ce) {
			t.Fatalf("an inactive subscription: %v, want a conflict", err)
		}
		wantUnchanged("after a refusal", unchanged(siblings))
	})

	n, err := st.RedeliverFailed(ctx, acc, w.ID, since, now)
	if err != nil || n != 2 {
		t.Fatalf("redelivered %d, %v; want the 2 failed since %s", n, err, since)
	}
	wantUnchanged("redelivering the failed ones since", left)
	// Exactly what Redeliver makes of one.
	one, err := st.Redeliver(ctx, acc, w.ID, before.ID, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []domain.Delivery{atSince, after} {
		got := read(d)
		if got.Status != domain.DeliveryPending || !got.NextAttemptAt.Equal(now) || got.RoundAttempts() != 0 || got.Attempts != 1 ||
			got.SecretVersion != rotated.SecretVersion || got.LeaseUntil != nil ||
			got.Status != one.Status || !got.NextAttemptAt.Equal(*one.NextAttemptAt) || got.RoundStart != one.RoundStart ||
			got.SecretVersion != one.SecretVersion {
			t.Errorf("redelivered %+v; Redeliver made %+v", got, one)
		}
	}
	jobs, err := st.ClaimDeliveries(ctx, now, time.Minute, 10)
	if err != nil {
		t.Fatal(err)
	}
	signed := map[string]string{}
	for _, j := range jobs {
		signed[j.ID] = j.Secret
	}
	if len(jobs) != 3 || signed[atSince.ID] != "whsec_rotated" || signed[after.ID] != "whsec_rotated" || signed[before.ID] == "" {
		t.Fatalf("claimed %v; want the three redelivered, signed with the current secret", signed)
	}
	if n, err := st.RedeliverFailed(ctx, acc, w.ID, since, now); err != nil || n != 0 {
		t.Fatalf("again, with none failed: %d, %v", n, err)
	}
}

func testAttemptHeaders(t *testing.T, newStore NewStore) {
	ctx := context.Background()
	st := newStore(t)
	acc, other := NewAccount(t, st), NewAccount(t, st)
	w := newWebhook(t, st, acc)
	d := queueDelivery(t, st, w, Epoch)
	sent := map[string]string{"Content-Type": "application/json", "Service-Delivery-Id": d.ID,
		"Service-Signature": "t=1795255200,v1=0123abcd", "Accept": "a, b",
		"Webhook-Signature": "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4= v1,3TmRUD1jM+3A9Nqi3yz7JZ1iqG6DqtGUmqJlxVfAn2c="}
	next := Epoch.Add(5 * time.Second)
	if err := st.FinishAttempt(ctx, claimOneDelivery(t, st, Epoch), store.AttemptResult{
		Attempt: domain.DeliveryAttempt{AttemptedAt: Epoch, StatusCode: statusCode(503), RequestHeaders: sent},
		Status:  domain.DeliveryPending, NextAttemptAt: &next,
	}); err != nil {
		t.Fatal(err)
	}
	// An attempt recorded without headers, as every attempt was before they
	// were kept, in a batch.
	if err := st.FinishAttempts(ctx, []store.FinishedAttempt{{Job: claimOneDelivery(t, st, next), Result: store.AttemptResult{
		Attempt: domain.DeliveryAttempt{AttemptedAt: next, StatusCode: statusCode(204)}, Status: domain.DeliverySucceeded,
	}}}); err != nil {
		t.Fatal(err)
	}
	_, attempts, err := st.GetDelivery(ctx, acc, w.ID, d.ID)
	if err != nil || len(attempts) != 2 {
		t.Fatalf("attempts %+v, %v", attempts, err)
	}
	// A signature is kept with its time and scheme but without the value
	// that would let whoever reads the log replay the delivery.
	kept := maps.Clone(sent)
	kept["Service-Signature"] = "t=1795255200,v1=…redacted"
	kept["Webhook-Signature"] = "v1,…redacted v1,…redacted"
	if !maps.Equal(attempts[0].RequestHeaders, kept) {
		t.Errorf("headers read back %v, want %v", attempts[0].RequestHeaders, kept)
	}
	if attempts[1].RequestHeaders == nil || len(attempts[1].RequestHeaders) != 0 {
		t.Errorf("an attempt without headers reads back %#v, want an empty map", attempts[1].RequestHeaders)
	}
	_, _, err = st.GetDelivery(ctx, other, w.ID, d.ID)
	wantNotFound(t, "another account's delivery", err)
}
