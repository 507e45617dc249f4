package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// testMergeRedelivery: the deliveries made for a person before it was
// merged are retried as they were, its person.merged too; once the
// survivor is erased they carry the erasure's markers, and no
// redelivery, of one or of the failed ones, sends a marker in their place
// (issue 65), while the survivor's person.deleted is still sent again. A
// store of its own: the case claims every open burst and due delivery.
func testMergeRedelivery(t *testing.T, newStore NewStore) {
	st := newStore(t)
	ctx := context.Background()
	c := newPersonCase(t, st)
	hook := newWebhook(t, st, c.acc, domain.EventPersonCreated, domain.EventPersonUpdated, domain.EventPersonMerged, domain.EventPersonDeleted)
	a, _ := c.upsert(domain.PersonUpsert{Email: set("a@example.test")})
	b, _ := c.upsert(domain.PersonUpsert{Email: set("b@example.test")})
	// deliverAll sends every due delivery, each answered 200.
	deliverAll := func(want int) []domain.Delivery {
		t.Helper()
		jobs, err := st.ClaimDeliveries(ctx, c.now(), time.Minute, 50)
		if err != nil || len(jobs) != want {
			t.Fatalf("claim deliveries: %d, %v; want %d", len(jobs), err, want)
		}
		var out []domain.Delivery
		for _, j := range jobs {
			code := 200
			if err := st.FinishAttempt(ctx, j, store.AttemptResult{Attempt: domain.DeliveryAttempt{AttemptedAt: c.now(),
				StatusCode: &code, DurationMS: 3, RequestHeaders: map[string]string{"Service-Event": j.Delivery.Event}},
				Status: domain.DeliverySucceeded}); err != nil {
				t.Fatal(err)
			}
			out = append(out, j.Delivery)
		}
		return out
	}
	c.advance(burstWindow)
	claimed, err := st.ClaimBursts(ctx, c.now(), time.Minute, 10)
	if err != nil || len(claimed) != 2 {
		t.Fatalf("claim bursts: %+v, %v", claimed, err)
	}
	for _, cl := range claimed {
		if _, err := st.CloseBurst(ctx, cl, everySubscription(cl, c.now())); err != nil {
			t.Fatal(err)
		}
	}
	var created domain.Delivery
	for _, d := range deliverAll(2) {
		if d.PersonID == b.ID {
			created = d
		}
	}
	c.advance(time.Minute)
	c.merge(a.ID, b.ID)
	merged := deliverAll(1)[0]
	if merged.Event != domain.EventPersonMerged || merged.PersonID != b.ID {
		t.Fatalf("the merge's delivery %+v", merged)
	}

	// Before the erasure: retried as they were, the bodies unchanged.
	for _, d := range []domain.Delivery{created, merged} {
		before, _, err := st.GetDelivery(ctx, c.acc, hook.ID, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Redeliver(ctx, c.acc, hook.ID, d.ID, c.now()); err != nil {
			t.Fatalf("redeliver %s of the merged person: %v", d.Event, err)
		}
		again := deliverAll(1)[0]
		if again.ID != d.ID || string(again.Body) != string(before.Body) {
			t.Fatalf("the redelivery of %s sent %s, want %s as it was", d.Event, again.Body, before.Body)
		}
	}
	// One of them fails and is left failed, to be redelivered with the
	// failed ones after the erasure.
	if _, err := st.Redeliver(ctx, c.acc, hook.ID, created.ID, c.now()); err != nil {
		t.Fatal(err)
	}
	jobs, err := st.ClaimDeliveries(ctx, c.now(), time.Minute, 50)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %d, %v", len(jobs), err)
	}
	code := 500
	if err := st.FinishAttempt(ctx, jobs[0], store.AttemptResult{Attempt: domain.DeliveryAttempt{AttemptedAt: c.now(),
		StatusCode: &code, DurationMS: 3}, Status: domain.DeliveryFailed}); err != nil {
		t.Fatal(err)
	}

	c.advance(time.Minute)
	c.erase(a.ID, false)
	deleted := deliverAll(1)[0]
	if deleted.Event != domain.EventPersonDeleted || deleted.PersonID != a.ID {
		t.Fatalf("the erasure's delivery %+v", deleted)
	}
	for _, d := range []domain.Delivery{created, merged} {
		if _, err := st.Redeliver(ctx, c.acc, hook.ID, d.ID, c.now()); !isErr[*domain.ConflictError](err) {
			t.Errorf("redelivering %s of the merged person after the survivor's erasure: %v, want a conflict", d.Event, err)
		}
	}
	if n, err := st.RedeliverFailed(ctx, c.acc, hook.ID, Epoch, c.now()); err != nil || n != 0 {
		t.Errorf("redelivering the failed after the erasure queued %d, %v; want none of the merged person's", n, err)
	}
	ds, _, err := st.ListDeliveries(ctx, c.acc, hook.ID, domain.DeliveryFilter{Status: domain.DeliveryPending}, domain.PageRequest{Page: 1, Size: 50})
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(ds, func(d domain.Delivery) bool { return d.PersonID == b.ID }); i >= 0 {
		t.Errorf("a delivery of the merged person is pending after the survivor's erasure: %+v", ds[i])
	}
	if _, err := st.Redeliver(ctx, c.acc, hook.ID, deleted.ID, c.now()); err != nil {
		t.Errorf("redelivering the survivor's person.deleted: %v", err)
	}
	if list, total, err := st.ListErasures(ctx, c.acc, domain.PageRequest{Page: 1, Size: 10}); err != nil || total != 1 || list[0].PersonID != a.ID {
		t.Errorf("erasures listed %+v of %d, %v; want the one asked for", list, total, err)
	}
}
