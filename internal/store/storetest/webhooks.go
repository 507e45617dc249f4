package storetest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

const burstWindow = 5 * time.Minute

func newWebhook(t testing.TB, st store.Store, account string, events ...string) domain.Webhook {
	t.Helper()
	if len(events) == 0 {
		events = domain.WebhookEvents
	}
	w := domain.Webhook{
		ID: domain.NewID("wh"), AccountID: account, Name: "crm", TargetURL: "https://example.com/hook",
		Events: events, IsActive: true, Secret: "whsec_" + domain.RandomHex(16), SecretVersion: 1, SignatureScheme: domain.SchemePDS,
		CreatedAt: Epoch, UpdatedAt: Epoch,
	}
	if err := st.CreateWebhook(context.Background(), w); err != nil {
		t.Fatalf("create webhook: %v", err)
	}
	return w
}

func testWebhooks(t *testing.T, newStore NewStore) {
	ctx := context.Background()
	st := newStore(t)
	acc, other := NewAccount(t, st), NewAccount(t, st)
	a := newWebhook(t, st, acc, domain.EventPersonUpdated)
	b := newWebhook(t, st, acc)

	got, err := st.GetWebhook(ctx, acc, a.ID)
	if err != nil || got.Name != "crm" || !slices.Equal(got.Events, []string{domain.EventPersonUpdated}) || !got.IsActive ||
		got.Secret != a.Secret || got.SecretVersion != 1 || got.DisabledReason != nil || got.LastError != nil ||
		!got.CreatedAt.Equal(Epoch) || got.SignatureScheme != domain.SchemePDS || got.Previous != nil {
		t.Fatalf("read back %+v, %v", got, err)
	}
	list, total, err := st.ListWebhooks(ctx, acc, domain.PageRequest{Page: 1, Size: 1})
	if err != nil || total != 2 || len(list) != 1 {
		t.Fatalf("list: %d of %d, %v", len(list), total, err)
	}
	list2, _, err := st.ListWebhooks(ctx, acc, domain.PageRequest{Page: 2, Size: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(list2) != 1 || list2[0].ID == list[0].ID {
		t.Fatalf("page 2 %+v repeats page 1", list2)
	}

	t.Run("another account sees nothing", func(t *testing.T) {
		if l, n, err := st.ListWebhooks(ctx, other, domain.PageRequest{Page: 1, Size: 10}); err != nil || n != 0 || len(l) != 0 {
			t.Fatalf("foreign list: %d, %d, %v", len(l), n, err)
		}
		_, err := st.GetWebhook(ctx, other, a.ID)
		wantNotFound(t, "foreign get", err)
		name := "x"
		_, err = st.UpdateWebhook(ctx, other, a.ID, domain.WebhookUpdate{Name: &name}, Epoch)
		wantNotFound(t, "foreign update", err)
		wantNotFound(t, "foreign delete", st.DeleteWebhook(ctx, other, a.ID))
		_, _, err = st.RotateWebhookSecret(ctx, other, a.ID, "whsec_x", Epoch, Epoch)
		wantNotFound(t, "foreign rotate", err)
		_, _, err = st.ListDeliveries(ctx, other, a.ID, domain.DeliveryFilter{}, domain.PageRequest{Page: 1, Size: 10})
		wantNotFound(t, "foreign deliveries", err)
	})

	t.Run("update, deactivate, reactivate", func(t *testing.T) {
		name, url := "renamed", "https://example.org/x"
		w, err := st.UpdateWebhook(ctx, acc, a.ID, domain.WebhookUpdate{Name: &name, TargetURL: &url, Events: domain.WebhookEvents}, Epoch.Add(time.Minute))
		if err != nil || w.Name != name || w.TargetURL != url || !slices.Equal(w.Events, domain.WebhookEvents) || !w.UpdatedAt.Equal(Epoch.Add(time.Minute)) {
			t.Fatalf("update: %+v, %v", w, err)
		}
		off, on := false, true
		w, err = st.UpdateWebhook(ctx, acc, a.ID, domain.WebhookUpdate{IsActive: &off}, Epoch)
		if err != nil || w.IsActive || w.DisabledReason == nil || *w.DisabledReason != domain.DisabledManual {
			t.Fatalf("deactivate: %+v, %v", w, err)
		}
		w, err = st.UpdateWebhook(ctx, acc, a.ID, domain.WebhookUpdate{IsActive: &on}, Epoch)
		if err != nil || !w.IsActive || w.DisabledReason != nil || w.StreakStartedAt != nil || w.StreakFailures != 0 {
			t.Fatalf("reactivate: %+v, %v", w, err)
		}
		again, err := st.GetWebhook(ctx, acc, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if again.Name != name || !again.IsActive {
			t.Fatalf("update not stored: %+v", again)
		}
		standard := domain.SchemeStandardWebhooks
		if w, err = st.UpdateWebhook(ctx, acc, a.ID, domain.WebhookUpdate{SignatureScheme: &standard}, Epoch); err != nil || w.SignatureScheme != standard {
			t.Fatalf("scheme update: %+v, %v", w, err)
		}
		if again, err = st.GetWebhook(ctx, acc, a.ID); err != nil || again.SignatureScheme != standard || again.Name != name {
			t.Fatalf("scheme not stored: %+v, %v", again, err)
		}
	})

	t.Run("a subscription is created with its signature scheme", func(t *testing.T) {
		w := domain.Webhook{
			ID: domain.NewID("wh"), AccountID: acc, Name: "std", TargetURL: "https://example.com/std",
			Events: domain.WebhookEvents, IsActive: true, Secret: "whsec_c3Rk", SecretVersion: 1,
			SignatureScheme: domain.SchemeStandardWebhooks, CreatedAt: Epoch, UpdatedAt: Epoch,
		}
		if err := st.CreateWebhook(ctx, w); err != nil {
			t.Fatal(err)
		}
		if got, err := st.GetWebhook(ctx, acc, w.ID); err != nil || got.SignatureScheme != domain.SchemeStandardWebhooks {
			t.Fatalf("read back %+v, %v", got, err)
		}
		if err := st.DeleteWebhook(ctx, acc, w.ID); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("delete", func(t *testing.T) {
		if err := st.DeleteWebhook(ctx, acc, b.ID); err != nil {
			t.Fatal(err)
		}
		_, err := st.GetWebhook(ctx, acc, b.ID)
		wantNotFound(t, "deleted get", err)
		wantNotFound(t, "delete twice", st.DeleteWebhook(ctx, acc, b.ID))
	})
}

// openBurst creates a person at `at`, through the person write path that
// records the change in the outbox, and returns its id.
func openBurst(t testing.TB, st store.Store, account string, at time.Time) string {
	t.Helper()
	p, created, err := st.UpsertPerson(context.Background(), account,
		domain.PersonUpsert{ExternalID: domain.Opt[string]{Set: true, Value: domain.NewID("ext")}},
		store.Write{Now: at, Window: burstWindow})
	if err != nil || !created {
		t.Fatalf("create person: %v (created %v)", err, created)
	}
	return p.ID
}

// changePerson changes a person at `at`, sliding its burst.
func changePerson(t testing.TB, st store.Store, account, personID string, at time.Time) {
	t.Helper()
	if _, err := st.UpdatePerson(context.Background(), account, personID,
		domain.PersonUpdate{FirstName: domain.Opt[string]{Set: true, Value: domain.RandomHex(4)}},
		store.Write{Now: at, Window: burstWindow}); err != nil {
		t.Fatalf("change person: %v", err)
	}
}

// everySubscription is a CloseBurst builder: one delivery per active
// subscription listing the event, due at `at`.
func everySubscription(b domain.Burst, at time.Time) store.DeliveryBuilder {
	return func(active []domain.Webhook) ([]domain.Delivery, error) {
		var out []domain.Delivery
		for _, w := range active {
			if !w.Wants(b.Event) {
				continue
			}
			due := at
			out = append(out, domain.Delivery{
				ID: domain.RandomHex(16), AccountID: b.AccountID, WebhookID: w.ID, Event: b.Event, PersonID: b.PersonID,
				Body: []byte(`{"person":"` + b.PersonID + `"}`), SecretVersion: w.SecretVersion, Status: domain.DeliveryPending,
				NextAttemptAt: &due, CreatedAt: at,
			})
		}
		return out, nil
	}
}

func testWebhookOutbox(t *testing.T, newStore NewStore) {
	ctx := context.Background()
	lease := time.Minute

	t.Run("a burst keeps its opening event and slides its due time", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		acc := NewAccount(t, st)
		p := openBurst(t, st, acc, Epoch)
		changePerson(t, st, acc, p, Epoch.Add(time.Minute))
		if got, err := st.ClaimBursts(ctx, Epoch.Add(burstWindow), lease, 10); err != nil || len(got) != 0 {
			t.Fatalf("claimed %d bursts before the slid burstWindow closed, err %v", len(got), err)
		}
		got, err := st.ClaimBursts(ctx, Epoch.Add(time.Minute+burstWindow), lease, 10)
		if err != nil || len(got) != 1 || got[0].PersonID != p || got[0].Event != domain.EventPersonCreated || got[0].AccountID != acc ||
			!got[0].DueAt.Equal(Epoch.Add(time.Minute+burstWindow)) || got[0].LeaseToken == "" {
			t.Fatalf("claim: %+v, %v", got, err)
		}
	})

	t.Run("a lease keeps a burst from other claims until it expires", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		acc := NewAccount(t, st)
		openBurst(t, st, acc, Epoch)
		now := Epoch.Add(burstWindow)
		first, err := st.ClaimBursts(ctx, now, lease, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(first) != 1 || first[0].Event != domain.EventPersonCreated {
			t.Fatalf("first claim: %+v", first)
		}
		if again, err := st.ClaimBursts(ctx, now.Add(lease-time.Millisecond), lease, 10); err != nil || len(again) != 0 {
			t.Fatalf("a leased burst was claimed again, err %v", err)
		}
		taken, err := st.ClaimBursts(ctx, now.Add(lease), lease, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(taken) != 1 || taken[0].LeaseToken == first[0].LeaseToken {
			t.Fatalf("an expired lease was not taken over: %+v", taken)
		}
		// The first holder lost it: closing with its token does nothing.
		closed, err := st.CloseBurst(ctx, first[0], everySubscription(first[0], now))
		if err != nil || closed {
			t.Fatalf("close with a lost lease: %v, %v", closed, err)
		}
		closed, err = st.CloseBurst(ctx, taken[0], nil)
		if err != nil || !closed {
			t.Fatalf("close by the new holder: %v, %v", closed, err)
		}
	})

	t.Run("CloseBursts settles each burst as CloseBurst would and makes leased deliveries leased", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		acc := NewAccount(t, st)
		sub := newWebhook(t, st, acc)
		moved := openBurst(t, st, acc, Epoch)
		lost := openBurst(t, st, acc, Epoch)
		plain := openBurst(t, st, acc, Epoch)
		leased := openBurst(t, st, acc, Epoch)
		now := Epoch.Add(burstWindow)
		claimed, err := st.ClaimBursts(ctx, now, lease, 10)
		if err != nil || len(claimed) != 4 {
			t.Fatalf("claim: %+v, %v", claimed, err)
		}
		changePerson(t, st, acc, moved, now.Add(-time.Second)) // after the claim: handed back
		byPerson := map[string]domain.Burst{}
		for _, b := range claimed {
			byPerson[b.PersonID] = b
		}
		stale := byPerson[lost]
		stale.LeaseToken = "another" // the lease passed to another worker
		byPerson[lost] = stale
		bursts := []domain.Burst{byPerson[leased], byPerson[moved], byPerson[lost], byPerson[plain]}
		until := now.Add(lease)
		closed, err := st.CloseBursts(ctx, bursts, func(b domain.Burst, active []domain.Webhook) ([]domain.DeliveryJob, error) {
			ds, err := everySubscription(b, now)(active)
			var jobs []domain.DeliveryJob
			for _, d := range ds {
				job := domain.DeliveryJob{Delivery: d}
				if b.PersonID == leased {
					job.LeaseUntil, job.LeaseToken = &until, "maker"
				}
				jobs = append(jobs, job)
			}
			return jobs, err
		})
		if err != nil || !slices.Equal(closed, []bool{true, false, false, true}) {
			t.Fatalf("closed %v, %v; want leased and plain", closed, err)
		}
		ds, n, err := st.ListDeliveries(ctx, acc, sub.ID, domain.DeliveryFilter{}, domain.PageRequest{Page: 1, Size: 10})
		if err != nil || n != 2 {
			t.Fatalf("deliveries: %+v, %v", ds, err)
		}
		// The plain one is claimable; the one made leased is not until its
		// lease runs out.
		jobs, err := st.ClaimDeliveries(ctx, now, time.Hour, 10)
		if err != nil || len(jobs) != 1 || jobs[0].PersonID != plain {
			t.Fatalf("claim at once: %+v, %v", jobs, err)
		}
		jobs, err = st.ClaimDeliveries(ctx, until, lease, 10)
		if err != nil || len(jobs) != 1 || jobs[0].PersonID != leased {
			t.Fatalf("claim once the maker's lease ran out: %+v, %v", jobs, err)
		}
		if b, err := st.PendingBurst(ctx, acc, moved); err != nil || b == nil {
			t.Fatalf("the moved burst is not waiting: %+v, %v", b, err)
		}
		if b, err := st.PendingBurst(ctx, acc, plain); err == nil && b != nil {
			t.Fatalf("the closed burst is still open: %+v", b)
		}
	})

	t.Run("a change moving the due time after the claim releases the burst", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		acc := NewAccount(t, st)
		newWebhook(t, st, acc)
		p := openBurst(t, st, acc, Epoch)
		now := Epoch.Add(burstWindow)
		claimed, err := st.ClaimBursts(ctx, now, lease, 10)
		if err != nil {
			t.Fatal(err)
		}
		// Another instance, its clock a little behind, sees the window open.
		changePerson(t, st, acc, p, now.Add(-time.Second))
		closed, err := st.CloseBurst(ctx, claimed[0], everySubscription(claimed[0], now))
		if err != nil || closed {
			t.Fatalf("closed a burst a later change moved: %v, %v", closed, err)
		}
		again, err := st.ClaimBursts(ctx, now.Add(burstWindow), lease, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(again) != 1 || again[0].Event != domain.EventPersonCreated {
			t.Fatalf("the released burst is not claimable at its new due time: %+v", again)
		}
		closed, err = st.CloseBurst(ctx, again[0], everySubscription(again[0], now.Add(burstWindow)))
		if err != nil || !closed {
			t.Fatalf("close: %v, %v", closed, err)
		}
		ds, n, err := st.ListDeliveries(ctx, acc, mustOnlyWebhook(t, st, acc).ID, domain.DeliveryFilter{}, domain.PageRequest{Page: 1, Size: 10})
		if err != nil {
			t.Fatal(err)
		}
		if n != 1 || ds[0].PersonID != p || ds[0].Event != domain.EventPersonCreated {
			t.Fatalf("deliveries after close: %+v", ds)
		}
		if left, err := st.ClaimBursts(ctx, now.Add(24*time.Hour), lease, 10); err != nil || len(left) != 0 {
			t.Fatalf("a closed burst is still in the outbox: %+v, err %v", left, err)
		}
	})

	t.Run("a change after the window closed waits as the next burst, person.updated", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		acc := NewAccount(t, st)
		newWebhook(t, st, acc)
		p := openBurst(t, st, acc, Epoch)
		closedAt := Epoch.Add(burstWindow)
		changePerson(t, st, acc, p, closedAt) // no change came for the window: it closed
		changePerson(t, st, acc, p, closedAt.Add(time.Minute))
		claimed, err := st.ClaimBursts(ctx, closedAt.Add(time.Minute), lease, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(claimed) != 1 || claimed[0].Event != domain.EventPersonCreated || !claimed[0].DueAt.Equal(closedAt) {
			t.Fatalf("the closed burst: %+v", claimed)
		}
		changePerson(t, st, acc, p, closedAt.Add(2*time.Minute)) // after the claim: slides the next burst
		closed, err := st.CloseBurst(ctx, claimed[0], everySubscription(claimed[0], closedAt))
		if err != nil || !closed {
			t.Fatalf("close: %v, %v", closed, err)
		}
		nextDue := closedAt.Add(2*time.Minute + burstWindow)
		if b, err := st.PendingBurst(ctx, acc, p); err != nil || b.Event != domain.EventPersonUpdated ||
			!b.OpenedAt.Equal(closedAt) || !b.DueAt.Equal(nextDue) {
			t.Fatalf("the next burst: %+v, %v", b, err)
		}
		if got, err := st.ClaimBursts(ctx, nextDue.Add(-time.Millisecond), lease, 10); err != nil || len(got) != 0 {
			t.Fatalf("the next burst was claimed before its window closed: %+v, err %v", got, err)
		}
		next, err := st.ClaimBursts(ctx, nextDue, lease, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(next) != 1 || next[0].Event != domain.EventPersonUpdated {
			t.Fatalf("the next burst: %+v", next)
		}
		if closed, err := st.CloseBurst(ctx, next[0], everySubscription(next[0], nextDue)); err != nil || !closed {
			t.Fatalf("close the next burst: %v, %v", closed, err)
		}
		ds, n, err := st.ListDeliveries(ctx, acc, mustOnlyWebhook(t, st, acc).ID, domain.DeliveryFilter{}, domain.PageRequest{Page: 1, Size: 10})
		if err != nil {
			t.Fatal(err)
		}
		if n != 2 || ds[0].Event != domain.EventPersonUpdated || ds[1].Event != domain.EventPersonCreated {
			t.Fatalf("deliveries: %+v", ds)
		}
		if left, err := st.ClaimBursts(ctx, nextDue.Add(24*time.Hour), lease, 10); err != nil || len(left) != 0 {
			t.Fatalf("a closed burst is still in the outbox: %+v, err %v", left, err)
		}
	})

	t.Run("a failing builder rolls the close back", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		acc := NewAccount(t, st)
		w := newWebhook(t, st, acc)
		openBurst(t, st, acc, Epoch)
		now := Epoch.Add(burstWindow)
		claimed, err := st.ClaimBursts(ctx, now, lease, 10)
		if err != nil {
			t.Fatal(err)
		}
		build := everySubscription(claimed[0], now)
		closed, err := st.CloseBurst(ctx, claimed[0], func(ws []domain.Webhook) ([]domain.Delivery, error) {
			ds, _ := build(ws)
			return ds, errors.New("render failed")
		})
		if err == nil || closed {
			t.Fatalf("close with a failing builder: %v, %v", closed, err)
		}
		if ds, n, err := st.ListDeliveries(ctx, acc, w.ID, domain.DeliveryFilter{}, domain.PageRequest{Page: 1, Size: 10}); err != nil || n != 0 {
			t.Fatalf("deliveries survived the rollback: %+v, err %v", ds, err)
		}
		if again, err := st.ClaimBursts(ctx, now.Add(lease), lease, 10); err != nil || len(again) != 1 {
			t.Fatalf("the burst is not claimable again after its lease, err %v", err)
		}
	})

	t.Run("closing offers only the account's active subscriptions", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		acc, other := NewAccount(t, st), NewAccount(t, st)
		active := newWebhook(t, st, acc)
		inactive := newWebhook(t, st, acc)
		off := false
		if _, err := st.UpdateWebhook(ctx, acc, inactive.ID, domain.WebhookUpdate{IsActive: &off}, Epoch); err != nil {
			t.Fatal(err)
		}
		newWebhook(t, st, other)
		openBurst(t, st, acc, Epoch)
		claimed, err := st.ClaimBursts(ctx, Epoch.Add(burstWindow), lease, 10)
		if err != nil {
			t.Fatal(err)
		}
		var offered []string
		closed, err := st.CloseBurst(ctx, claimed[0], func(ws []domain.Webhook) ([]domain.Delivery, error) {
			for _, w := range ws {
				offered = append(offered, w.ID)
			}
			return nil, nil
		})
		if err != nil || !closed || !slices.Equal(offered, []string{active.ID}) {
			t.Fatalf("offered %v (closed %v, %v), want only %s", offered, closed, err, active.ID)
		}
	})

	t.Run("a change racing the close of its person's burst is never lost", func(t *testing.T) {
		st := newStore(t)
		acc := NewAccount(t, st)
		p := openBurst(t, st, acc, Epoch)
		due := Epoch.Add(burstWindow)
		for round := range 10 {
			claimed, _ := st.ClaimBursts(ctx, due, lease, 10)
			if len(claimed) != 1 {
				t.Fatalf("round %d: %d bursts claimed", round, len(claimed))
			}
			// The change comes after the window closed: whichever of the two
			// goes first, the change waits as (or opens) the next burst.
			changedAt := due.Add(time.Minute)
			var (
				wg        sync.WaitGroup
				closed    bool
				closeErr  error
				changeErr error
			)
			start := make(chan struct{})
			wg.Add(2)
			go func() {
				defer wg.Done()
				<-start
				closed, closeErr = st.CloseBurst(ctx, claimed[0], nil)
			}()
			go func() {
				defer wg.Done()
				<-start
				_, changeErr = st.UpdatePerson(ctx, acc, p, domain.PersonUpdate{FirstName: domain.Opt[string]{Set: true, Value: domain.RandomHex(4)}},
					store.Write{Now: changedAt, Window: burstWindow})
			}()
			close(start)
			wg.Wait()
			if closeErr != nil || !closed || changeErr != nil {
				t.Fatalf("round %d: close %v, %v; change %v", round, closed, closeErr, changeErr)
			}
			b, err := st.PendingBurst(ctx, acc, p)
			if err != nil || b.Event != domain.EventPersonUpdated || !b.OpenedAt.Equal(changedAt) || !b.DueAt.Equal(changedAt.Add(burstWindow)) {
				t.Fatalf("round %d: the burst after the change: %+v, %v", round, b, err)
			}
			due = b.DueAt
		}
	})

	t.Run("concurrent claimers never share a burst", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		acc := NewAccount(t, st)
		const bursts = 40
		for range bursts {
			openBurst(t, st, acc, Epoch)
		}
		claimEachOnce(t, "burst", bursts, func() ([]string, error) {
			got, err := st.ClaimBursts(ctx, Epoch.Add(burstWindow), lease, 3)
			ids := make([]string, len(got))
			for i, b := range got {
				ids[i] = b.PersonID
			}
			return ids, err
		})
	})
}

func mustOnlyWebhook(t testing.TB, st store.Store, acc string) domain.Webhook {
	t.Helper()
	ws, n, err := st.ListWebhooks(context.Background(), acc, domain.PageRequest{Page: 1, Size: 10})
	if err != nil || n != 1 {
		t.Fatalf("want one webhook: %d, %v", n, err)
	}
	return ws[0]
}

// queueDelivery makes one delivery for w through the outbox, due at `at`.
func queueDelivery(t testing.TB, st store.Store, w domain.Webhook, at time.Time) domain.Delivery {
	t.Helper()
	return queueDeliveryAs(t, st, w, at, "")
}

// queueDeliveryAs is queueDelivery under a chosen id ("" draws one).
func queueDeliveryAs(t testing.TB, st store.Store, w domain.Webhook, at time.Time, id string) domain.Delivery {
	t.Helper()
	return queueDeliveryEdited(t, st, w, at, func(d *domain.Delivery) {
		if id != "" {
			d.ID = id
		}
	})
}

// queueDeliveryEdited is queueDelivery with the delivery edited before it
// is stored.
func queueDeliveryEdited(t testing.TB, st store.Store, w domain.Webhook, at time.Time, edit func(*domain.Delivery)) domain.Delivery {
	t.Helper()
	ctx := context.Background()
	openBurst(t, st, w.AccountID, at.Add(-burstWindow))
	claimed, err := st.ClaimBursts(ctx, at, time.Minute, 1)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim burst: %+v, %v", claimed, err)
	}
	var made domain.Delivery
	build := everySubscription(claimed[0], at)
	if _, err := st.CloseBurst(ctx, claimed[0], func(ws []domain.Webhook) ([]domain.Delivery, error) {
		ds, err := build(slices.DeleteFunc(ws, func(x domain.Webhook) bool { return x.ID != w.ID }))
		edit(&ds[0])
		made = ds[0]
		return ds, err
	}); err != nil {
		t.Fatal(err)
	}
	return made
}

func claimOneDelivery(t testing.TB, st store.Store, now time.Time) domain.DeliveryJob {
	t.Helper()
	jobs, err := st.ClaimDeliveries(context.Background(), now, time.Minute, 10)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim deliveries: %d, %v; want 1", len(jobs), err)
	}
	return jobs[0]
}

func statusCode(n int) *int { return &n }

func testWebhookDeliveries(t *testing.T, newStore NewStore) {
	ctx := context.Background()
	page := domain.PageRequest{Page: 1, Size: 10}

	t.Run("claim, lease, succeed; log and attempts", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		acc, other := NewAccount(t, st), NewAccount(t, st)
		w := newWebhook(t, st, acc)
		d := queueDelivery(t, st, w, Epoch)
		if jobs, err := st.ClaimDeliveries(ctx, Epoch.Add(-time.Millisecond), time.Minute, 10); err != nil || len(jobs) != 0 {
			t.Fatalf("claimed a delivery before it was due, err %v", err)
		}
		job := claimOneDelivery(t, st, Epoch)
		if job.ID != d.ID || job.TargetURL != w.TargetURL || job.Secret != w.Secret || string(job.Body) != string(d.Body) {
			t.Fatalf("job %+v", job)
		}
		if jobs, err := st.ClaimDeliveries(ctx, Epoch, time.Minute, 10); err != nil || len(jobs) != 0 {
			t.Fatalf("a leased delivery was claimed twice, err %v", err)
		}
		_, err := st.Redeliver(ctx, acc, w.ID, d.ID, Epoch)
		var ce *domain.ConflictError
		if !errors.As(err, &ce) {
			t.Fatalf("redeliver during an attempt: %v, want a conflict", err)
		}
		if err := st.FinishAttempt(ctx, job, store.AttemptResult{
			Attempt: domain.DeliveryAttempt{AttemptedAt: Epoch, StatusCode: statusCode(200), DurationMS: 12},
			Status:  domain.DeliverySucceeded,
		}); err != nil {
			t.Fatal(err)
		}
		got, attempts, err := st.GetDelivery(ctx, acc, w.ID, d.ID)
		if err != nil || got.Status != domain.DeliverySucceeded || got.Attempts != 1 || *got.LastStatusCode != 200 ||
			got.LastError != nil || len(attempts) != 1 || attempts[0].DurationMS != 12 || *attempts[0].StatusCode != 200 ||
			string(got.Body) != string(d.Body) {
			t.Fatalf("after success: %+v %+v %v", got, attempts, err)
		}
		_, _, err = st.GetDelivery(ctx, other, w.ID, d.ID)
		wantNotFound(t, "foreign delivery", err)
		// Finishing again with the spent lease records nothing.
		if err := st.FinishAttempt(ctx, job, store.AttemptResult{Attempt: domain.DeliveryAttempt{AttemptedAt: Epoch}, Status: domain.DeliveryFailed}); err != nil {
			t.Fatal(err)
		}
		if got, attempts, err := st.GetDelivery(ctx, acc, w.ID, d.ID); err != nil || got.Status != domain.DeliverySucceeded || len(attempts) != 1 {
			t.Fatalf("a spent lease changed the delivery: %+v, err %v", got, err)
		}

		redo, err := st.Redeliver(ctx, acc, w.ID, d.ID, Epoch.Add(time.Hour))
		if err != nil || redo.ID != d.ID || redo.Status != domain.DeliveryPending || redo.RoundAttempts() != 0 || redo.Attempts != 1 {
			t.Fatalf("redeliver: %+v, %v", redo, err)
		}
		if job := claimOneDelivery(t, st, Epoch.Add(time.Hour)); job.ID != d.ID {
			t.Fatalf("redelivered job %s", job.ID)
		}
	})

	t.Run("released before its lease runs out, claimed again at once", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		acc := NewAccount(t, st)
		w := newWebhook(t, st, acc)
		d := queueDelivery(t, st, w, Epoch)
		job := claimOneDelivery(t, st, Epoch)
		if err := st.ReleaseDeliveries(ctx, []domain.DeliveryJob{job}); err != nil {
			t.Fatal(err)
		}
		again := claimOneDelivery(t, st, Epoch)
		if again.ID != d.ID || again.LeaseToken == job.LeaseToken {
			t.Fatalf("claimed after release: %+v", again)
		}
		// The first claim's lease is spent: releasing under it leaves the
		// second claim's lease alone, and recording under it records nothing.
		if err := st.ReleaseDeliveries(ctx, []domain.DeliveryJob{job}); err != nil {
			t.Fatal(err)
		}
		if jobs, err := st.ClaimDeliveries(ctx, Epoch, time.Minute, 10); err != nil || len(jobs) != 0 {
			t.Fatalf("a stale release freed a delivery another claim holds: %d, %v", len(jobs), err)
		}
		if err := st.FinishAttempt(ctx, job, store.AttemptResult{Attempt: domain.DeliveryAttempt{AttemptedAt: Epoch}, Status: domain.DeliveryFailed}); err != nil {
			t.Fatal(err)
		}
		if got, attempts, err := st.GetDelivery(ctx, acc, w.ID, d.ID); err != nil || got.Status != domain.DeliveryPending || len(attempts) != 0 {
			t.Fatalf("a released lease recorded an attempt: %+v %v, err %v", got, attempts, err)
		}
		if err := st.ReleaseDeliveries(ctx, nil); err != nil {
			t.Fatalf("release nothing: %v", err)
		}
	})

	t.Run("newest first, paged", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		acc := NewAccount(t, st)
		w := newWebhook(t, st, acc)
		var ids []string
		for i := range 3 {
			ids = append(ids, queueDelivery(t, st, w, Epoch.Add(time.Duration(i)*time.Hour)).ID)
		}
		ds, n, err := st.ListDeliveries(ctx, acc, w.ID, domain.DeliveryFilter{}, domain.PageRequest{Page: 1, Size: 2})
		if err != nil || n != 3 || len(ds) != 2 || ds[0].ID != ids[2] || ds[1].ID != ids[1] {
			t.Fatalf("list: %+v, %d, %v", ds, n, err)
		}
	})

	t.Run("a retry stays pending, a failure streak deactivates and cancels", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		acc := NewAccount(t, st)
		w := newWebhook(t, st, acc)
		d1 := queueDelivery(t, st, w, Epoch)
		job := claimOneDelivery(t, st, Epoch)
		next := Epoch.Add(5 * time.Second)
		msg := "HTTP 503 Service Unavailable"
		if err := st.FinishAttempt(ctx, job, store.AttemptResult{
			Attempt: domain.DeliveryAttempt{AttemptedAt: Epoch, StatusCode: statusCode(503)},
			Status:  domain.DeliveryPending, NextAttemptAt: &next, Error: &msg,
		}); err != nil {
			t.Fatal(err)
		}
		got, _, err := st.GetDelivery(ctx, acc, w.ID, d1.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != domain.DeliveryPending || !got.NextAttemptAt.Equal(next) || got.Attempts != 1 || *got.LastError != msg {
			t.Fatalf("after a retryable failure: %+v", got)
		}
		if hook, err := st.GetWebhook(ctx, acc, w.ID); err != nil || hook.LastError == nil || *hook.LastError != msg || hook.StreakFailures != 0 {
			t.Fatalf("subscription after a retryable failure: %+v, err %v", hook, err)
		}

		var seen []int
		fail := func(job domain.DeliveryJob, at time.Time) {
			t.Helper()
			msg := "HTTP 404 Not Found: not retried"
			if err := st.FinishAttempt(ctx, job, store.AttemptResult{
				Attempt: domain.DeliveryAttempt{AttemptedAt: at, StatusCode: statusCode(404)}, Status: domain.DeliveryFailed, Error: &msg,
				Deactivate: func(start time.Time, failures int) bool {
					seen = append(seen, failures)
					return failures >= 2 && at.Sub(start) >= 48*time.Hour
				},
			}); err != nil {
				t.Fatal(err)
			}
		}
		fail(claimOneDelivery(t, st, next), next)
		queueDelivery(t, st, w, Epoch.Add(24*time.Hour))
		fail(claimOneDelivery(t, st, Epoch.Add(24*time.Hour)), Epoch.Add(24*time.Hour))
		if hook, err := st.GetWebhook(ctx, acc, w.ID); err != nil || !hook.IsActive || hook.StreakFailures != 2 || !hook.StreakStartedAt.Equal(next) {
			t.Fatalf("a streak shorter than its span deactivated, or was not counted: %+v, err %v", hook, err)
		}
		third := queueDelivery(t, st, w, Epoch.Add(49*time.Hour))
		queueDelivery(t, st, w, Epoch.Add(50*time.Hour))
		fail(claimOneDelivery(t, st, Epoch.Add(49*time.Hour)), Epoch.Add(49*time.Hour))
		hook, err := st.GetWebhook(ctx, acc, w.ID)
		if err != nil {
			t.Fatal(err)
		}
		if hook.IsActive || hook.DisabledReason == nil || *hook.DisabledReason != domain.DisabledFailures || hook.LastError == nil {
			t.Fatalf("a long streak did not deactivate: %+v", hook)
		}
		if !slices.Equal(seen, []int{1, 2, 3}) {
			t.Fatalf("streak counts offered %v", seen)
		}
		ds, _, err := st.ListDeliveries(ctx, acc, w.ID, domain.DeliveryFilter{}, page)
		if err != nil {
			t.Fatal(err)
		}
		if ds[0].Status != domain.DeliveryFailed || ds[0].LastError == nil || ds[0].NextAttemptAt != nil {
			t.Fatalf("the pending delivery was not cancelled: %+v", ds[0])
		}
		if got, _, err := st.GetDelivery(ctx, acc, w.ID, third.ID); err != nil || got.Status != domain.DeliveryFailed || *got.LastStatusCode != 404 {
			t.Fatalf("the failing delivery: %+v, err %v", got, err)
		}
		if jobs, err := st.ClaimDeliveries(ctx, Epoch.Add(100*time.Hour), time.Minute, 10); err != nil || len(jobs) != 0 {
			t.Fatalf("claimed %d deliveries of an inactive subscription, err %v", len(jobs), err)
		}
		var ce *domain.ConflictError
		if _, err := st.Redeliver(ctx, acc, w.ID, third.ID, Epoch.Add(100*time.Hour)); !errors.As(err, &ce) {
			t.Fatalf("redeliver on an inactive subscription: %v", err)
		}
	})

	t.Run("410 retires at once and cancels the other pending deliveries", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		acc := NewAccount(t, st)
		w := newWebhook(t, st, acc)
		gone := queueDelivery(t, st, w, Epoch)
		queued := queueDelivery(t, st, w, Epoch.Add(time.Hour))
		msg := "HTTP 410 Gone"
		if err := st.FinishAttempt(ctx, claimOneDelivery(t, st, Epoch), store.AttemptResult{
			Attempt: domain.DeliveryAttempt{AttemptedAt: Epoch, StatusCode: statusCode(410)}, Status: domain.DeliveryFailed, Error: &msg, Gone: true,
		}); err != nil {
			t.Fatal(err)
		}
		hook, err := st.GetWebhook(ctx, acc, w.ID)
		if err != nil {
			t.Fatal(err)
		}
		if hook.IsActive || *hook.DisabledReason != domain.DisabledGone || *hook.LastError != msg {
			t.Fatalf("after 410: %+v", hook)
		}
		g, _, err := st.GetDelivery(ctx, acc, w.ID, gone.ID)
		if err != nil {
			t.Fatal(err)
		}
		q, _, err := st.GetDelivery(ctx, acc, w.ID, queued.ID)
		if err != nil {
			t.Fatal(err)
		}
		if g.Status != domain.DeliveryFailed || *g.LastError != msg || q.Status != domain.DeliveryFailed || q.Attempts != 0 || q.LastError == nil {
			t.Fatalf("deliveries after 410: %+v / %+v", g, q)
		}
	})

	t.Run("an attempt in flight when its delivery is cancelled is still recorded", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		acc := NewAccount(t, st)
		w := newWebhook(t, st, acc)
		d := queueDelivery(t, st, w, Epoch)
		job := claimOneDelivery(t, st, Epoch)
		off := false
		if _, err := st.UpdateWebhook(ctx, acc, w.ID, domain.WebhookUpdate{IsActive: &off}, Epoch); err != nil {
			t.Fatal(err)
		}
		next := Epoch.Add(time.Minute)
		if err := st.FinishAttempt(ctx, job, store.AttemptResult{
			Attempt: domain.DeliveryAttempt{AttemptedAt: Epoch, StatusCode: statusCode(500)}, Status: domain.DeliveryPending, NextAttemptAt: &next,
		}); err != nil {
			t.Fatal(err)
		}
		got, attempts, err := st.GetDelivery(ctx, acc, w.ID, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != domain.DeliveryFailed || got.NextAttemptAt != nil || len(attempts) != 1 || got.LastError == nil {
			t.Fatalf("cancelled delivery after its attempt: %+v, %d attempts", got, len(attempts))
		}
	})

	t.Run("rotation keeps pending deliveries on their secret until they finish", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		acc := NewAccount(t, st)
		w := newWebhook(t, st, acc)
		old := queueDelivery(t, st, w, Epoch)
		overlap := Epoch.Add(25 * time.Hour)
		hook, rounds, err := st.RotateWebhookSecret(ctx, acc, w.ID, "whsec_second", Epoch.Add(time.Minute), overlap)
		if err != nil || hook.Secret != "whsec_second" || hook.SecretVersion != 2 ||
			len(rounds) != 1 || rounds[0].RoundAttempts != 0 || !rounds[0].NextAttemptAt.Equal(Epoch) {
			t.Fatalf("rotate: %+v %+v %v", hook, rounds, err)
		}
		want := domain.RetiredSecret{Secret: w.Secret, Until: overlap}
		if hook.Previous == nil || *hook.Previous != want {
			t.Fatalf("rotation's previous secret %+v; want %+v", hook.Previous, want)
		}
		if read, err := st.GetWebhook(ctx, acc, w.ID); err != nil || read.Previous == nil || *read.Previous != want {
			t.Fatalf("read back: %+v, %v", read, err)
		}
		fresh := queueDelivery(t, st, *hook, Epoch.Add(time.Hour))
		jobs, err := st.ClaimDeliveries(ctx, Epoch.Add(time.Hour), time.Minute, 10)
		if err != nil || len(jobs) != 2 {
			t.Fatalf("claim: %d, %v", len(jobs), err)
		}
		secrets := map[string]string{}
		for _, j := range jobs {
			secrets[j.ID] = j.Secret
			// Every job knows the subscription's secrets, for the scheme
			// that signs with each.
			if j.CurrentSecret != "whsec_second" || j.Previous == nil || *j.Previous != want || j.SignatureScheme != domain.SchemePDS {
				t.Fatalf("job %s: current %q, previous %+v, scheme %q", j.ID, j.CurrentSecret, j.Previous, j.SignatureScheme)
			}
		}
		if secrets[old.ID] != w.Secret || secrets[fresh.ID] != "whsec_second" {
			t.Fatalf("secrets by delivery %v; want the old one for %s", secrets, old.ID)
		}
		for _, j := range jobs {
			if err := st.FinishAttempt(ctx, j, store.AttemptResult{
				Attempt: domain.DeliveryAttempt{AttemptedAt: Epoch.Add(time.Hour), StatusCode: statusCode(204)}, Status: domain.DeliverySucceeded,
			}); err != nil {
				t.Fatal(err)
			}
		}
		// The old secret is gone now: a redelivery signs with the current one.
		if _, err := st.Redeliver(ctx, acc, w.ID, old.ID, Epoch.Add(2*time.Hour)); err != nil {
			t.Fatal(err)
		}
		if job := claimOneDelivery(t, st, Epoch.Add(2*time.Hour)); job.Secret != "whsec_second" || job.SecretVersion != 2 {
			t.Fatalf("redelivery signed with %q (version %d)", job.Secret, job.SecretVersion)
		}
		_, rounds, err = st.RotateWebhookSecret(ctx, acc, w.ID, "whsec_third", Epoch.Add(3*time.Hour), Epoch.Add(4*time.Hour))
		if err != nil || len(rounds) != 1 {
			t.Fatalf("rotate with one leased pending delivery: %+v, %v", rounds, err)
		}
	})

	t.Run("concurrent claimers never share a delivery", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		acc := NewAccount(t, st)
		w := newWebhook(t, st, acc)
		const deliveries = 30
		for range deliveries {
			queueDelivery(t, st, w, Epoch)
		}
		claimEachOnce(t, "delivery", deliveries, func() ([]string, error) {
			jobs, err := st.ClaimDeliveries(ctx, Epoch, time.Minute, 2)
			ids := make([]string, len(jobs))
			for i, j := range jobs {
				ids[i] = j.ID
			}
			return ids, err
		})
	})

	t.Run("a local listener: stored, offered to closing bursts, claimed only on its host, ended by a new target", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		acc := NewAccount(t, st)
		plain := newWebhook(t, st, acc)
		lw := domain.Webhook{
			ID: domain.NewID("wh"), AccountID: acc, Name: "pds webhooks listen (laptop, 42)", TargetURL: "http://127.0.0.1:4242/",
			Events: domain.WebhookEvents, IsActive: true, Secret: "whsec_" + domain.RandomHex(16), SecretVersion: 1,
			CreatedAt: Epoch, UpdatedAt: Epoch, LocalListener: true, ListenerHost: "laptop",
		}
		if err := st.CreateWebhook(ctx, lw); err != nil {
			t.Fatal(err)
		}
		nameless := lw
		nameless.ID, nameless.ListenerHost = domain.NewID("wh"), ""
		if err := st.CreateWebhook(ctx, nameless); err == nil {
			t.Fatal("a local listener without its host was stored")
		}
		if got, err := st.GetWebhook(ctx, acc, lw.ID); err != nil || !got.LocalListener || got.ListenerHost != "laptop" {
			t.Fatalf("read back %+v, %v", got, err)
		}
		if got, err := st.GetWebhook(ctx, acc, plain.ID); err != nil || got.LocalListener || got.ListenerHost != "" {
			t.Fatalf("an ordinary subscription reads back %+v, %v", got, err)
		}
		list, _, err := st.ListWebhooks(ctx, acc, domain.PageRequest{Page: 1, Size: 10})
		if err != nil || len(list) != 2 || list[0].LocalListener == list[1].LocalListener {
			t.Fatalf("list %+v, %v", list, err)
		}

		openBurst(t, st, acc, Epoch.Add(-burstWindow))
		claimed, err := st.ClaimBursts(ctx, Epoch, time.Minute, 1)
		if err != nil || len(claimed) != 1 {
			t.Fatalf("claim burst: %+v, %v", claimed, err)
		}
		build := everySubscription(claimed[0], Epoch)
		if _, err := st.CloseBurst(ctx, claimed[0], func(active []domain.Webhook) ([]domain.Delivery, error) {
			for _, w := range active {
				if (w.ID == lw.ID) != (w.LocalListener && w.ListenerHost == "laptop") {
					t.Errorf("closing offered %+v", w)
				}
			}
			return build(active)
		}); err != nil {
			t.Fatal(err)
		}
		elsewhere, err := st.ClaimDeliveriesFairly(ctx, Epoch, time.Minute, store.DeliveryClaim{Limit: 10, Host: "server"})
		if err != nil || len(elsewhere) != 1 || elsewhere[0].WebhookID != plain.ID || elsewhere[0].LocalListener {
			t.Fatalf("a claim on another host: %+v, %v; want the ordinary subscription's delivery alone", elsewhere, err)
		}
		here, err := st.ClaimDeliveriesFairly(ctx, Epoch, time.Minute, store.DeliveryClaim{Limit: 10, Host: "laptop"})
		if err != nil || len(here) != 1 || here[0].WebhookID != lw.ID || !here[0].LocalListener || here[0].ListenerHost != "laptop" ||
			here[0].TargetURL != lw.TargetURL || here[0].Secret != lw.Secret {
			t.Fatalf("a claim on the listener's host: %+v, %v", here, err)
		}

		name, target := "renamed", "https://example.com/hook"
		w, err := st.UpdateWebhook(ctx, acc, lw.ID, domain.WebhookUpdate{Name: &name}, Epoch)
		if err != nil || !w.LocalListener || w.ListenerHost != "laptop" {
			t.Fatalf("a rename ended the local listener: %+v, %v", w, err)
		}
		w, err = st.UpdateWebhook(ctx, acc, lw.ID, domain.WebhookUpdate{TargetURL: &target}, Epoch)
		if err != nil || w.LocalListener || w.ListenerHost != "" {
			t.Fatalf("a new target kept the local listener: %+v, %v", w, err)
		}
		if got, err := st.GetWebhook(ctx, acc, lw.ID); err != nil || got.LocalListener || got.ListenerHost != "" {
			t.Fatalf("after a new target, read back %+v, %v", got, err)
		}
	})

	t.Run("deleting a subscription deletes its deliveries", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		acc := NewAccount(t, st)
		w := newWebhook(t, st, acc)
		d := queueDelivery(t, st, w, Epoch)
		job := claimOneDelivery(t, st, Epoch)
		if err := st.DeleteWebhook(ctx, acc, w.ID); err != nil {
			t.Fatal(err)
		}
		if err := st.FinishAttempt(ctx, job, store.AttemptResult{Attempt: domain.DeliveryAttempt{AttemptedAt: Epoch}, Status: domain.DeliverySucceeded}); err != nil {
			t.Fatalf("finishing an attempt of a deleted subscription: %v", err)
		}
		_, _, err := st.GetDelivery(ctx, acc, w.ID, d.ID)
		wantNotFound(t, "delivery of a deleted subscription", err)
	})
}

// claimEachOnce runs four claimers until nothing is left and checks that
// each of the want items was claimed by exactly one of them.
func claimEachOnce(t *testing.T, kind string, want int, claim func() ([]string, error)) {
	t.Helper()
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				ids, err := claim()
				if err != nil {
					t.Error(err)
					return
				}
				if len(ids) == 0 {
					return
				}
				mu.Lock()
				for _, id := range ids {
					seen[id]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != want {
		t.Fatalf("claimed %d distinct %s items, want %d", len(seen), kind, want)
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("%s %s claimed %d times", kind, id, n)
		}
	}
}
