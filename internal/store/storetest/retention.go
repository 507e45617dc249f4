package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// finishedDelivery queues a delivery for w at `at` and records one attempt
// at `at` that leaves it with status. Nothing else may be due at `at`.
func finishedDelivery(t testing.TB, st store.Store, w domain.Webhook, at time.Time, status string) domain.Delivery {
	t.Helper()
	d := queueDelivery(t, st, w, at)
	finishClaimed(t, st, claimOneDelivery(t, st, at), at, status)
	return d
}

func finishClaimed(t testing.TB, st store.Store, job domain.DeliveryJob, at time.Time, status string) {
	t.Helper()
	code := 200
	if status == domain.DeliveryFailed {
		code = 404
	}
	if err := st.FinishAttempt(context.Background(), job, store.AttemptResult{
		Attempt: domain.DeliveryAttempt{AttemptedAt: at, StatusCode: &code, DurationMS: 3}, Status: status,
	}); err != nil {
		t.Fatal(err)
	}
}

func testWebhookRetention(t *testing.T, newStore NewStore) {
	ctx := context.Background()
	st := newStore(t)
	acc, other := NewAccount(t, st), NewAccount(t, st)
	w, w2, wo := newWebhook(t, st, acc), newWebhook(t, st, acc), newWebhook(t, st, other)
	cutoff := Epoch.Add(40 * 24 * time.Hour)

	// Finished before the cutoff: pruned, in either account.
	var old []domain.Delivery
	for i, status := range []string{domain.DeliverySucceeded, domain.DeliveryFailed, domain.DeliverySucceeded, domain.DeliveryFailed} {
		old = append(old, finishedDelivery(t, st, w, Epoch.Add(time.Duration(i)*time.Hour), status))
	}
	old = append(old, finishedDelivery(t, st, wo, Epoch.Add(6*time.Hour), domain.DeliverySucceeded))

	// Created long ago, but redelivered and attempted at the cutoff: its
	// last activity is the attempt, so it is kept.
	revived := finishedDelivery(t, st, w, Epoch.Add(7*time.Hour), domain.DeliveryFailed)
	if _, err := st.Redeliver(ctx, acc, w.ID, revived.ID, cutoff); err != nil {
		t.Fatal(err)
	}
	finishClaimed(t, st, claimOneDelivery(t, st, cutoff), cutoff, domain.DeliverySucceeded)
	// Finished at the cutoff: not older than it.
	young := finishedDelivery(t, st, w, cutoff, domain.DeliverySucceeded)
	otherYoung := finishedDelivery(t, st, wo, cutoff, domain.DeliveryFailed)

	// Created long ago and still being attempted: one pending, one
	// cancelled (failed) while its attempt is in flight, its lease held.
	inFlight := queueDelivery(t, st, w, Epoch.Add(8*time.Hour))
	cancelled := queueDelivery(t, st, w2, Epoch.Add(9*time.Hour))
	if jobs, err := st.ClaimDeliveries(ctx, cutoff, time.Minute, 10); err != nil || len(jobs) != 2 {
		t.Fatalf("claim the in-flight pair: %d, %v", len(jobs), err)
	}
	off := false
	if _, err := st.UpdateWebhook(ctx, acc, w2.ID, domain.WebhookUpdate{IsActive: &off}, cutoff); err != nil {
		t.Fatal(err)
	}
	if d, _, err := st.GetDelivery(ctx, acc, w2.ID, cancelled.ID); err != nil || d.Status != domain.DeliveryFailed || d.LeaseUntil == nil {
		t.Fatalf("the cancelled delivery should be failed with its lease held: %+v, err %v", d, err)
	}
	// Pending and never attempted.
	pending := queueDelivery(t, st, w, Epoch.Add(10*time.Hour))

	// Rotating keeps the first secret for the pending deliveries; the old
	// finished deliveries signed with it are pruned below.
	if _, _, err := st.RotateWebhookSecret(ctx, acc, w.ID, "whsec_rotated", cutoff, cutoff); err != nil {
		t.Fatal(err)
	}

	n, err := st.PruneDeliveries(ctx, cutoff, 2)
	if err != nil || n != len(old) {
		t.Fatalf("pruned %d, %v; want %d over several batches of 2", n, err, len(old))
	}
	for _, d := range old {
		_, _, err := st.GetDelivery(ctx, d.AccountID, d.WebhookID, d.ID)
		wantNotFound(t, "a pruned delivery", err)
	}
	for _, d := range []domain.Delivery{revived, young, otherYoung, inFlight, cancelled, pending} {
		if _, _, err := st.GetDelivery(ctx, d.AccountID, d.WebhookID, d.ID); err != nil {
			t.Fatalf("delivery %s (created %s) was pruned: %v", d.ID, d.CreatedAt, err)
		}
	}
	if ds, total, err := st.ListDeliveries(ctx, acc, w.ID, domain.DeliveryFilter{}, domain.PageRequest{Page: 1, Size: 10}); err != nil || total != 4 || len(ds) != 4 {
		t.Fatalf("log after pruning: %d of %d, want revived, young, in flight and pending, err %v", len(ds), total, err)
	}
	if ds, total, err := st.ListDeliveries(ctx, other, wo.ID, domain.DeliveryFilter{}, domain.PageRequest{Page: 1, Size: 10}); err != nil || total != 1 || ds[0].ID != otherYoung.ID {
		t.Fatalf("other account's log after pruning: %+v, err %v", ds, err)
	}
	if n, err := st.PruneDeliveries(ctx, cutoff, 2); err != nil || n != 0 {
		t.Fatalf("pruning again: %d, %v", n, err)
	}

	t.Run("the attempts go with their delivery", func(t *testing.T) {
		// A new delivery under a pruned id starts with an empty log.
		again := queueDeliveryAs(t, st, w, cutoff.Add(time.Hour), old[0].ID)
		if _, attempts, err := st.GetDelivery(ctx, acc, w.ID, again.ID); err != nil || len(attempts) != 0 {
			t.Fatalf("attempts of the pruned delivery survived: %+v, %v", attempts, err)
		}
	})

	t.Run("pending deliveries keep their retired secret", func(t *testing.T) {
		jobs, err := st.ClaimDeliveries(ctx, cutoff.Add(2*time.Minute), time.Minute, 10)
		if err != nil {
			t.Fatal(err)
		}
		signed := map[string]string{}
		for _, j := range jobs {
			signed[j.ID] = j.Secret
		}
		if signed[inFlight.ID] != w.Secret || signed[pending.ID] != w.Secret {
			t.Fatalf("secrets by delivery after pruning: %v; want the retired one for %s and %s", signed, inFlight.ID, pending.ID)
		}
	})
}
