package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

func testAccountCounts(t *testing.T, newStore NewStore) {
	ctx := context.Background()
	st := newStore(t)
	acc, other := NewAccount(t, st), NewAccount(t, st)
	want := func(what, account string, c domain.AccountCounts) {
		t.Helper()
		if got, err := st.AccountCounts(ctx, account); err != nil || got != c {
			t.Fatalf("%s: %+v, %v; want %+v", what, got, err, c)
		}
	}
	want("an empty account", acc, domain.AccountCounts{})

	p1 := openBurst(t, st, acc, Epoch)
	openBurst(t, st, acc, Epoch.Add(time.Second))
	changePerson(t, st, acc, p1, Epoch.Add(2*time.Second)) // moves p1 along the persons timeline
	crumb := func(in domain.BreadcrumbInput, at time.Time) {
		t.Helper()
		in.Flavor = "page_view"
		if _, _, err := st.AppendBreadcrumb(ctx, acc, in, store.Write{Now: at, Window: burstWindow}); err != nil {
			t.Fatal(err)
		}
	}
	replayed := domain.BreadcrumbID(acc, "click-1")
	crumb(domain.BreadcrumbInput{ID: replayed, PersonID: &p1}, Epoch.Add(3*time.Second))
	crumb(domain.BreadcrumbInput{ID: replayed, PersonID: &p1}, Epoch.Add(4*time.Second))   // the same record
	crumb(domain.BreadcrumbInput{Email: new("new@example.com")}, Epoch.Add(5*time.Second)) // creates a person
	want("persons and breadcrumbs", acc, domain.AccountCounts{Persons: 3, Breadcrumbs: 2})
	// An import counts its new persons its own way (a delta per chunk).
	var lines []importLine
	for range 3 {
		lines = append(lines, importLine{in: domain.PersonUpsert{ExternalID: domain.Opt[string]{Set: true, Value: domain.NewID("imported")}}})
	}
	if _, err := st.ImportPersons(ctx, acc, lineSeq(lines, nil), store.Write{Now: Epoch.Add(6 * time.Second), Window: burstWindow}); err != nil {
		t.Fatal(err)
	}
	want("with imported persons", acc, domain.AccountCounts{Persons: 6, Breadcrumbs: 2})

	w := newWebhook(t, st, acc)
	off := newWebhook(t, st, acc)
	if _, err := st.UpdateWebhook(ctx, acc, off.ID, domain.WebhookUpdate{IsActive: new(false)}, Epoch); err != nil {
		t.Fatal(err)
	}
	// Each delivery is made for a new person's burst.
	queueDelivery(t, st, w, Epoch.Add(time.Hour))
	queueDelivery(t, st, w, Epoch.Add(2*time.Hour))
	finishClaimed(t, st, claimOneDelivery(t, st, Epoch.Add(time.Hour)), Epoch.Add(time.Hour), domain.DeliverySucceeded)
	want("with subscriptions and a pending delivery", acc, domain.AccountCounts{Persons: 8, Breadcrumbs: 2, Subscriptions: 2, PendingDeliveries: 1})

	want("another account", other, domain.AccountCounts{})
	openBurst(t, st, other, Epoch)
	want("another account's own person", other, domain.AccountCounts{Persons: 1})
	want("the first account, after the other's write", acc, domain.AccountCounts{Persons: 8, Breadcrumbs: 2, Subscriptions: 2, PendingDeliveries: 1})
}
