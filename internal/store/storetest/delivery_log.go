package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

func init() {
	register("webhook_delivery_log", testDeliveryLog)
}

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
