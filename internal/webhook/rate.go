package webhook

import (
	"context"
	"time"
)

// A subscription's max_per_second is a budget per wall-clock second that
// every instance shares, kept in the database as the API keys' budgets are
// (store LeaseRate over rate_windows, one atomic upsert that grants
// min(want, limit - taken)): before starting attempts of such a
// subscription an instance leases a few of the current second's, and it
// starts them only within that second. What it leased and did not start
// by the second's end is lost, so together the instances never start more
// than the limit in a second, and may start fewer. A delivery over the
// budget stays queued for the next second; it is neither failed nor
// counted as an attempt. Subscriptions without a bound never wait here.

// rateKey names a subscription's budget in rate_windows, apart from the
// API keys' ids.
func rateKey(webhookID string) string { return "webhook:" + webhookID }

// rateRetry is how soon a lease that failed (the database did not answer)
// is tried again.
const rateRetry = 200 * time.Millisecond

// rateGrant is what this instance holds of a subscription's budget.
type rateGrant struct {
	second  int64 // unix second the grant is for
	avail   int   // leased and not yet started
	leasing bool  // a lease is under way
}

// take spends one attempt of the grant when it is for now's second.
func (g *rateGrant) take(now time.Time) bool {
	if g.second != now.Unix() || g.avail == 0 {
		return false
	}
	g.avail--
	return true
}

// leaseRate leases up to want attempts of the subscription's budget for
// second sec, then starts what may start; the caller set leasing. A second
// whose budget is spent wakes the dispatcher at the next one.
func (d *dispatcher) leaseRate(webhookID string, limit, want int, sec int64) {
	granted, _, err := d.w.jobs.LeaseRate(context.Background(), rateKey(webhookID), time.Unix(sec, 0), limit, want)
	if err != nil {
		d.w.failed("webhook worker: leasing a subscription's rate budget", err, "webhook_id", webhookID)
		granted = 0
	}
	d.mu.Lock()
	if q := d.subs[webhookID]; q != nil {
		q.grant = rateGrant{second: sec, avail: granted}
	}
	d.mu.Unlock()
	switch {
	case err != nil:
		time.AfterFunc(rateRetry, d.startReady)
	case granted == 0:
		next := time.Unix(sec+1, 0).Sub(d.w.clock.Now())
		time.AfterFunc(max(next, time.Millisecond), d.startReady)
	default:
		d.startReady()
	}
}

// rateDepth bounds what a subscription with a bound holds claimed: two
// seconds of its budget (at least its slots), so that its queue does not
// wait past its leases while other instances share the budget.
func (d *dispatcher) rateDepth(limit int) int { return max(d.bound(), 2*limit) }

// pruneRateWindows drops the rate windows of seconds long past (the API
// keys' windows of a minute are left until they have ended too).
func (w *Worker) pruneRateWindows(ctx context.Context, now time.Time) error {
	return w.jobs.PruneRate(ctx, now.Add(-2*time.Minute))
}
