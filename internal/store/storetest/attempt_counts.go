package storetest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// attempted records one finished attempt of a new delivery of w at `at`:
// answered with code, or unanswered when code is 0. Nothing else may be due
// at `at`.
func attempted(t testing.TB, st store.Store, w domain.Webhook, at time.Time, code int) {
	t.Helper()
	queueDelivery(t, st, w, at)
	if err := st.FinishAttempt(context.Background(), claimOneDelivery(t, st, at), attemptResult(at, code)); err != nil {
		t.Fatal(err)
	}
}

func attemptResult(at time.Time, code int) store.AttemptResult {
	r := store.AttemptResult{Attempt: domain.DeliveryAttempt{AttemptedAt: at}, Status: domain.DeliveryFailed}
	if code != 0 {
		r.Attempt.StatusCode = &code
	}
	if code >= 200 && code < 300 {
		r.Status = domain.DeliverySucceeded
	}
	return r
}

func testAttemptCounts(t *testing.T, newStore NewStore) {
	ctx := context.Background()
	st := newStore(t)
	acc, other := NewAccount(t, st), NewAccount(t, st)
	w1, w2, wo := newWebhook(t, st, acc), newWebhook(t, st, acc), newWebhook(t, st, other)
	h := func(hours int, minutes time.Duration) time.Time {
		return Epoch.Add(time.Duration(hours)*time.Hour + minutes*time.Minute)
	}
	attempted(t, st, w1, h(0, 5), 200)
	attempted(t, st, w1, h(0, 10), 404)
	attempted(t, st, w1, h(0, 20), 0)
	attempted(t, st, w2, h(0, 30), 204)
	attempted(t, st, wo, h(0, 40), 200)
	attempted(t, st, w1, h(1, 1), 503)
	attempted(t, st, w1, h(1, 2), 301)
	attempted(t, st, w2, h(2, 5), 0)
	// Two attempts recorded in one batch, in one hour.
	queueDelivery(t, st, w1, h(3, 1))
	queueDelivery(t, st, w1, h(3, 2))
	jobs, err := st.ClaimDeliveries(ctx, h(3, 2), time.Minute, 10)
	if err != nil || len(jobs) != 2 {
		t.Fatalf("claim: %d, %v", len(jobs), err)
	}
	if err := st.FinishAttempts(ctx, []store.FinishedAttempt{
		{Job: jobs[0], Result: attemptResult(h(3, 2), 200)}, {Job: jobs[1], Result: attemptResult(h(3, 2), 500)},
	}); err != nil {
		t.Fatal(err)
	}
	// An attempt whose lease passed to another claim is not recorded, so
	// not counted either.
	queueDelivery(t, st, w1, h(3, 10))
	lost := claimOneDelivery(t, st, h(3, 10))
	if err := st.ReleaseDeliveries(ctx, []domain.DeliveryJob{lost}); err != nil {
		t.Fatal(err)
	}
	claimOneDelivery(t, st, h(3, 10))
	if err := st.FinishAttempt(ctx, lost, attemptResult(h(3, 11), 200)); err != nil {
		t.Fatal(err)
	}

	type row struct {
		webhook                   string
		hour                      time.Time
		succeeded, failed, errors int
	}
	want := func(rows ...row) []domain.AttemptCount {
		slices.SortStableFunc(rows, func(a, b row) int { return cmp.Compare(a.webhook, b.webhook) })
		out := []domain.AttemptCount{}
		for _, r := range rows {
			out = append(out, domain.AttemptCount{WebhookID: r.webhook, Hour: r.hour, Succeeded: r.succeeded, Failed: r.failed, Errors: r.errors})
		}
		return out
	}
	check := func(what, account string, since time.Time, want []domain.AttemptCount) {
		t.Helper()
		got, err := st.AttemptCounts(ctx, account, since)
		if err != nil || !slices.EqualFunc(got, want, func(a, b domain.AttemptCount) bool {
			return a.WebhookID == b.WebhookID && a.Hour.Equal(b.Hour) && a.Hour.Location() == time.UTC &&
				a.Succeeded == b.Succeeded && a.Failed == b.Failed && a.Errors == b.Errors
		}) {
			t.Errorf("%s: %s, %v; want %s", what, countsText(got), err, countsText(want))
		}
	}
	check("from within the first hour", acc, h(0, 30), want(
		row{w1.ID, h(0, 0), 1, 1, 1}, row{w1.ID, h(1, 0), 0, 2, 0}, row{w1.ID, h(3, 0), 1, 1, 0},
		row{w2.ID, h(0, 0), 1, 0, 0}, row{w2.ID, h(2, 0), 0, 0, 1}))
	check("from the last minute of the second hour", acc, h(1, 59), want(
		row{w1.ID, h(1, 0), 0, 2, 0}, row{w1.ID, h(3, 0), 1, 1, 0}, row{w2.ID, h(2, 0), 0, 0, 1}))
	check("after the last attempt", acc, h(4, 0), want())
	check("another account sees its own alone", other, Epoch, want(row{wo.ID, h(0, 0), 1, 0, 0}))

	t.Run("a deleted subscription's counts go with it", func(t *testing.T) {
		if err := st.DeleteWebhook(ctx, acc, w2.ID); err != nil {
			t.Fatal(err)
		}
		check("after deleting w2", acc, Epoch, want(
			row{w1.ID, h(0, 0), 1, 1, 1}, row{w1.ID, h(1, 0), 0, 2, 0}, row{w1.ID, h(3, 0), 1, 1, 0}))
	})

	t.Run("retention deletes the counts of the hours it passed", func(t *testing.T) {
		if _, err := st.PruneDeliveries(ctx, h(3, 0), 100); err != nil {
			t.Fatal(err)
		}
		check("after pruning before the fourth hour", acc, Epoch, want(row{w1.ID, h(3, 0), 1, 1, 0}))
		check("after pruning, the other account", other, Epoch, want())
		if _, err := st.PruneDeliveries(ctx, h(3, 59), 100); err != nil {
			t.Fatal(err)
		}
		check("an hour that has not ended by the cutoff is kept", acc, Epoch, want(row{w1.ID, h(3, 0), 1, 1, 0}))
	})
}

func countsText(cs []domain.AttemptCount) string {
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "%s %s %d/%d/%d; ", c.WebhookID, c.Hour.Format(time.RFC3339), c.Succeeded, c.Failed, c.Errors)
	}
	return "[" + b.String() + "]"
}
