package storetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

// The reads the console's keys, delivery log and tags screens make.

func testRevokeAccountKey(t *testing.T, newStore NewStore) {
	ctx := context.Background()
	st := newStore(t)
	a, other := NewAccount(t, st), NewAccount(t, st)
	k := newKey(a, []domain.Scope{domain.ScopeKeysWrite}, Epoch)
	foreign := newKey(other, []domain.Scope{domain.ScopeTagsRead}, Epoch)
	for _, key := range []domain.APIKey{k, foreign} {
		if err := st.CreateKey(ctx, key); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.RevokeAccountKey(ctx, a, foreign.ID, Epoch); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("revoking another account's key: %v, want not found", err)
	}
	if got, err := st.KeyByHash(ctx, foreign.Hash); err != nil || got.RevokedAt != nil {
		t.Fatalf("another account's key after a refused revocation: %+v, %v", got, err)
	}
	at := Epoch.Add(time.Minute)
	if got, err := st.RevokeAccountKey(ctx, a, k.ID, at); err != nil || !got.Equal(at) {
		t.Fatalf("revoke: %v, %v", got, err)
	}
	if got, err := st.RevokeAccountKey(ctx, a, k.ID, at.Add(time.Minute)); err != nil || !got.Equal(at) {
		t.Fatalf("revoke again: %v, %v; want the first time kept", got, err)
	}
	if got, err := st.KeyByHash(ctx, k.Hash); err != nil || got.Usable(at) {
		t.Fatalf("the revoked key reads %+v, %v", got, err)
	}
	if _, err := st.RevokeAccountKey(ctx, a, "key_missing", at); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("revoke a missing key: %v", err)
	}
}

func testTagHolderCounts(t *testing.T, newStore NewStore) {
	ctx := context.Background()
	c := newPersonCase(t, newStore(t))
	vip, donor, none := c.tag("vip"), c.tag("donor"), c.tag("none")
	o := c.other()
	foreign := o.tag("vip")
	for i := range 5 {
		p, _ := c.upsert(domain.PersonUpsert{ExternalID: setText(fmt.Sprintf("p%d", i))})
		tags := []string{vip}
		if i < 2 {
			tags = append(tags, donor)
		}
		if _, err := c.st.AddPersonTags(ctx, c.acc, p.ID, tags, c.write()); err != nil {
			t.Fatal(err)
		}
		if i == 4 {
			// A link made and broken counts no more.
			if err := c.st.RemovePersonTag(ctx, c.acc, p.ID, vip, c.write()); err != nil {
				t.Fatal(err)
			}
		}
	}
	q, _ := o.upsert(domain.PersonUpsert{ExternalID: setText("q")})
	if _, err := o.st.AddPersonTags(ctx, o.acc, q.ID, []string{foreign}, o.write()); err != nil {
		t.Fatal(err)
	}
	got, err := c.st.TagHolderCounts(ctx, c.acc, []string{vip, donor, none, foreign, vip})
	want := map[string]int{vip: 4, donor: 2, none: 0, foreign: 0}
	if err != nil || !maps.Equal(got, want) {
		t.Fatalf("counts %v, %v; want %v (another account's tag counts 0)", got, err, want)
	}
	if got, err := o.st.TagHolderCounts(ctx, o.acc, []string{foreign, vip}); err != nil || !maps.Equal(got, map[string]int{foreign: 1, vip: 0}) {
		t.Fatalf("the other account's counts %v, %v", got, err)
	}
	if got, err := c.st.TagHolderCounts(ctx, c.acc, nil); err != nil || len(got) != 0 {
		t.Fatalf("no tags: %v, %v", got, err)
	}
}

func testAccountDeliveryLog(t *testing.T, newStore NewStore) {
	ctx := context.Background()
	st := newStore(t)
	acc, other, empty := NewAccount(t, st), NewAccount(t, st), NewAccount(t, st)
	w, sibling, foreign := newWebhook(t, st, acc), newWebhook(t, st, acc), newWebhook(t, st, other)
	at := func(i int) time.Time { return Epoch.Add(time.Duration(i) * time.Minute) }
	created, updated := domain.EventPersonCreated, domain.EventPersonUpdated
	failed, succeeded, pending := domain.DeliveryFailed, domain.DeliverySucceeded, domain.DeliveryPending

	// Interleaved between the two subscriptions, oldest first, the pending
	// ones last so that no claim takes them.
	var log []domain.Delivery
	for i, d := range []struct {
		hook                  domain.Webhook
		event, person, status string
	}{
		{w, created, "per_a", failed},
		{sibling, updated, "per_b", succeeded},
		{sibling, created, "per_a", failed},
		{w, updated, "per_c", succeeded},
		{sibling, updated, "per_b", pending},
		{w, created, "per_a", pending},
	} {
		log = append(log, loggedDelivery(t, st, d.hook, at(i), d.event, d.person, d.status))
	}
	loggedDelivery(t, st, foreign, at(9), created, "per_a", pending)
	newestFirst := slices.Clone(log)
	slices.Reverse(newestFirst)

	since := at(2)
	for _, tc := range []struct {
		name string
		f    domain.DeliveryFilter
		want func(d domain.Delivery) bool
	}{
		{"none", domain.DeliveryFilter{}, func(domain.Delivery) bool { return true }},
		{"status", domain.DeliveryFilter{Status: failed}, func(d domain.Delivery) bool { return d.Status == failed }},
		{"event", domain.DeliveryFilter{Event: updated}, func(d domain.Delivery) bool { return d.Event == updated }},
		{"person", domain.DeliveryFilter{PersonID: "per_a"}, func(d domain.Delivery) bool { return d.PersonID == "per_a" }},
		{"since", domain.DeliveryFilter{Since: &since}, func(d domain.Delivery) bool { return !d.CreatedAt.Before(since) }},
		{"nobody's", domain.DeliveryFilter{PersonID: "per_z"}, func(domain.Delivery) bool { return false }},
	} {
		want := deliveryIDs(slices.DeleteFunc(slices.Clone(newestFirst), func(d domain.Delivery) bool { return !tc.want(d) }))
		got, total, err := st.ListAccountDeliveries(ctx, acc, tc.f, domain.PageRequest{Page: 1, Size: 10})
		if err != nil || total != len(want) || !slices.Equal(deliveryIDs(got), want) {
			t.Errorf("%s: %v of %d, %v; want %v", tc.name, deliveryIDs(got), total, err, want)
		}
	}
	for page := 1; page <= 4; page++ {
		got, total, err := st.ListAccountDeliveries(ctx, acc, domain.DeliveryFilter{}, domain.PageRequest{Page: page, Size: 2})
		want := deliveryIDs(newestFirst[min(2*(page-1), len(log)):min(2*page, len(log))])
		if err != nil || total != len(log) || !slices.Equal(deliveryIDs(got), want) {
			t.Errorf("page %d: %v of %d, %v; want %v", page, deliveryIDs(got), total, err, want)
		}
	}
	got, _, err := st.ListAccountDeliveries(ctx, acc, domain.DeliveryFilter{Status: succeeded, Event: updated}, domain.PageRequest{Page: 1, Size: 10})
	if err != nil || len(got) != 2 || got[0].WebhookID != w.ID || got[1].WebhookID != sibling.ID || got[0].AccountID != acc ||
		!got[1].CreatedAt.Equal(at(1)) {
		t.Fatalf("read back %+v, %v", got, err)
	}
	if got, total, err := st.ListAccountDeliveries(ctx, other, domain.DeliveryFilter{}, domain.PageRequest{Page: 1, Size: 10}); err != nil ||
		total != 1 || len(got) != 1 || got[0].WebhookID != foreign.ID {
		t.Fatalf("the other account's log: %+v of %d, %v", got, total, err)
	}
	if got, total, err := st.ListAccountDeliveries(ctx, empty, domain.DeliveryFilter{}, domain.PageRequest{Page: 1, Size: 10}); err != nil ||
		total != 0 || len(got) != 0 {
		t.Fatalf("an account without subscriptions: %+v of %d, %v", got, total, err)
	}
}
