package webhook

import (
	"context"
	"sync"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// The dispatcher keeps Settings.Concurrency attempt slots busy with due
// deliveries, no more than Settings.PerSubscription of them for one
// subscription, and starts the next delivery the moment a slot frees: there
// is no barrier between claims, so one slow receiver holds only the slots
// of its own subscription.
//
// A claim leases due deliveries into per-subscription queues. So that
// claims stay few while attempts are many, a subscription may hold more
// claimed deliveries than it may attempt at once (its depth): twice its
// bound while its receiver is slow or unknown, so that each queued delivery
// starts within one attempt's time, well inside its lease; sixteen times
// its bound while its receiver answers within a second; sixty-four times
// while it answers within a tenth of one (64 rounds of 0.1 s start the last
// queued delivery within 6.4 s, still far inside startSlack), as far as
// the worker's own bound (maxClaimed) allows. The deeper queue is what lets
// a fast receiver be fed: each claim is a write transaction, and its
// deliveries must last until the next claim returns, so the claim's size,
// not the receiver, bounds the rate. A queued delivery whose
// lease no longer covers an attempt when its turn comes is not sent
// (attempt checks leaseCovers) and is claimed again once its lease has run
// out.
//
// Claims choose fairly (store.ClaimDeliveriesFairly: in turn across
// accounts, then across an account's subscriptions) and queued deliveries
// start in turn across subscriptions.

// fastAttempt and quickAttempt are how quickly a receiver must answer for
// its subscription to be queued deeply, or more deeply still.
const (
	fastAttempt  = time.Second
	quickAttempt = 100 * time.Millisecond
)

// Depth factors: claimed deliveries a subscription may hold, in multiples
// of its bound.
const (
	slowDepth  = 2
	fastDepth  = 16
	quickDepth = 64
)

type subQueue struct {
	inflight int
	queue    []domain.DeliveryJob
	// reserved: deliveries being made leased to this worker by a closing
	// burst's transaction, not queued until it commits.
	reserved int
	// last is how long its last attempt took; 0 while none has finished.
	last time.Duration
	// capped: the last claim gave it all the room it had, so more of its
	// deliveries may be due.
	capped bool
	// limit is its max_per_second as its latest queued delivery had it (0:
	// none), and grant what this instance leased of that budget (rate.go).
	limit int
	grant rateGrant
}

// push queues a claimed or made delivery; the caller holds mu.
func (q *subQueue) push(job domain.DeliveryJob) {
	q.queue = append(q.queue, job)
	q.limit = job.MaxPerSecond
}

type dispatcher struct {
	w       *Worker
	claimMu sync.Mutex // one claim at a time

	mu       sync.Mutex
	subs     map[string]*subQueue
	order    []string // subscriptions with queued deliveries, served in turn
	inflight int      // attempts running
	claimed  int      // claimed and neither recorded nor dropped yet
	// finishing: of claimed, the attempts that ended and wait for their
	// record. They hold no slot and no place in a queue, and under load
	// the records of a whole commit wait together, so counting them
	// against the worker's bound left the queues nearly empty by the time
	// a claim was worth its statement.
	finishing int
	// fresh: due work may have appeared (a tick, a closed burst), so the
	// next claim runs whatever the hysteresis below says; globalCapped:
	// the last claim took all it could.
	fresh, globalCapped bool
	// claims counts the claims that returned, so that a subscription the
	// dispatcher knows nothing of is known to have no backlog only once
	// one has run.
	claims   int
	stopping bool
	dropped  int           // attempts not started for want of lease, ever
	changed  chan struct{} // closed when claimed changes; nil until waited on
}

func newDispatcher(w *Worker) *dispatcher {
	return &dispatcher{w: w, subs: map[string]*subQueue{}, fresh: true}
}

// bound is the most attempts of one subscription in flight.
func (d *dispatcher) bound() int { return min(d.w.s.PerSubscription, d.w.s.Concurrency) }

// maxClaimed bounds the deliveries one worker holds claimed and not yet
// attempted (see holding). It also keeps
// a busy account's subscriptions from queueing so far ahead that another
// account's deliveries, which only a claim brings in, wait behind them: a
// quick subscription's depth is reached only when the worker has room.
//
// Eight times the slots: half of it (makerCap) is what closing bursts may
// queue without a claim, and at defaults (512 of 1,024) that covers a
// quick receiver for the time between two closing transactions. At four
// times (128 of 256) the queue ran dry between them and many deliveries
// of a backlog waited for a claim of their own, a write transaction each,
// which held pdsbench's delivery row on SQLite well below its rate at
// eight.
func (d *dispatcher) maxClaimed() int { return 8 * d.w.s.Concurrency }

// holding is how many claimed deliveries are queued or in flight; the
// caller holds mu.
func (d *dispatcher) holding() int { return d.claimed - d.finishing }

// fast: its receiver answered the last attempt within fastAttempt, so it
// is worth remembering between claims.
func (q *subQueue) fast() bool { return q.last > 0 && q.last < fastAttempt }

func (d *dispatcher) depth(q *subQueue) int {
	n := slowDepth * d.bound()
	switch {
	case q.fast() && q.last < quickAttempt:
		n = quickDepth * d.bound()
	case q.fast():
		n = fastDepth * d.bound()
	}
	if q.limit > 0 {
		n = min(n, d.rateDepth(q.limit))
	}
	return n
}

func (q *subQueue) held() int { return q.inflight + len(q.queue) + q.reserved }

// mayHaveMore makes the next claim run.
func (d *dispatcher) mayHaveMore() {
	d.mu.Lock()
	d.fresh = true
	d.mu.Unlock()
}

// fire wakes whoever waits for claimed to change; the caller holds mu.
func (d *dispatcher) fire() {
	if d.changed != nil {
		close(d.changed)
		d.changed = nil
	}
}

// claim leases due deliveries into the queues and starts what may start.
// It claims only when that is worth a statement: due work may have
// appeared, or a subscription (or the worker) that the last claim filled
// has half its room back.
func (d *dispatcher) claim(ctx context.Context) (int, error) {
	d.claimMu.Lock()
	defer d.claimMu.Unlock()
	d.mu.Lock()
	limit := d.maxClaimed() - d.holding()
	worth := d.fresh || (d.globalCapped && limit >= d.maxClaimed()/2)
	room := make(map[string]int, len(d.subs))
	for id, q := range d.subs {
		r := d.depth(q) - q.held()
		if q.capped && r >= d.depth(q)/2 {
			worth = true
		}
		room[id] = r
	}
	if !worth || limit <= 0 || d.stopping {
		d.mu.Unlock()
		return 0, nil
	}
	d.fresh = false
	d.mu.Unlock()

	jobs, err := d.w.jobs.ClaimDeliveriesFairly(ctx, d.w.clock.Now(), d.w.deliveryLease(), store.DeliveryClaim{
		Limit: limit, PerSubscription: slowDepth * d.bound(), Room: room, Host: d.w.s.Host,
	})
	if err != nil {
		d.mu.Lock()
		d.fresh = true // try again at the next turn
		d.mu.Unlock()
		return 0, err
	}
	got := map[string]int{}
	d.mu.Lock()
	for _, job := range jobs {
		q := d.subs[job.WebhookID]
		if q == nil {
			q = &subQueue{}
			d.subs[job.WebhookID] = q
		}
		if len(q.queue) == 0 {
			d.order = append(d.order, job.WebhookID)
		}
		q.push(job)
		got[job.WebhookID]++
	}
	d.claimed += len(jobs)
	d.claims++
	d.globalCapped = len(jobs) > 0 && len(jobs) == limit
	for id, q := range d.subs {
		r, known := room[id]
		if !known {
			r = slowDepth * d.bound()
		}
		if !known || r > 0 {
			// A subscription the claim left out (no room) keeps what it
			// knew: its backlog is still there.
			q.capped = got[id] > 0 && got[id] >= r
		}
		if q.held() == 0 && !q.fast() {
			delete(d.subs, id) // nothing to remember of it
		}
	}
	if len(jobs) > 0 {
		d.fire()
	}
	d.mu.Unlock()
	d.startReady()
	return len(jobs), nil
}

// makerCap bounds what deliveries leased as they are made may bring the
// claimed count to: the claim always keeps half the worker's room, so that
// another account's due deliveries are taken in their turn however many
// bursts one account closes.
func (d *dispatcher) makerCap() int { return d.maxClaimed() / 2 }

// reserve takes room for one delivery of sub that a closing burst makes
// leased to this worker. It refuses when the subscription may have older
// due deliveries that a claim has not taken (the last claim filled its
// room, or nothing is known of it), so that a new delivery does not pass
// its subscription's backlog, and when the subscription or the worker is
// at its bound.
func (d *dispatcher) reserve(sub string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopping {
		return false
	}
	// A delivery refused for want of room is left due in the table, where
	// only a claim takes it: mark the worker or the subscription capped so
	// that the claim runs once room is back, and not at the next tick.
	if d.holding() >= d.makerCap() {
		d.globalCapped = true
		return false
	}
	q := d.subs[sub]
	if q == nil {
		if d.claims == 0 || d.globalCapped {
			return false
		}
		q = &subQueue{}
		d.subs[sub] = q
	}
	if q.capped {
		return false
	}
	if q.held() >= d.depth(q) {
		q.capped = true
		return false
	}
	q.reserved++
	d.claimed++
	return true
}

// unreserve gives back room reserve took for deliveries that were not made.
func (d *dispatcher) unreserve(subs map[string]int) {
	if len(subs) == 0 {
		return
	}
	d.mu.Lock()
	for id, n := range subs {
		q := d.subs[id]
		q.reserved -= n
		d.claimed -= n
		if q.held() == 0 && !q.fast() {
			delete(d.subs, id)
		}
	}
	d.fire()
	d.mu.Unlock()
}

// admit queues deliveries made leased to this worker, in the room reserve
// took for them, and starts what may start. Once the worker stops they are
// handed back like queued deliveries, for any instance to claim.
func (d *dispatcher) admit(jobs []domain.DeliveryJob) {
	var dropped []domain.DeliveryJob
	defer func() { d.release(dropped) }()
	d.mu.Lock()
	for _, job := range jobs {
		q := d.subs[job.WebhookID]
		q.reserved--
		if d.stopping {
			dropped = append(dropped, job)
			d.claimed--
			if q.held() == 0 && !q.fast() {
				delete(d.subs, job.WebhookID)
			}
			continue
		}
		if len(q.queue) == 0 {
			d.order = append(d.order, job.WebhookID)
		}
		q.push(job)
	}
	d.fire()
	d.mu.Unlock()
	d.startReady()
}

// makerLease leases to this worker the deliveries one CloseBursts call
// makes, as far as reserve gives room, so that they start without a claim.
// Its transaction may run the builder again for a burst (group commit runs
// a batch again without a failed member), so each burst's reservation is
// taken afresh and only the last one counts.
type makerLease struct {
	d     *dispatcher
	token string
	until time.Time
	mu    sync.Mutex
	jobs  map[string][]domain.DeliveryJob // by person
	order []string                        // persons, as first taken
}

func (d *dispatcher) newMakerLease(until time.Time) *makerLease {
	return &makerLease{d: d, token: domain.RandomHex(16), until: until, jobs: map[string][]domain.DeliveryJob{}}
}

// take turns a burst's deliveries into jobs, leased where reserve gives
// room and the delivery is due at once.
func (l *makerLease) take(person string, ds []domain.Delivery, active []domain.Webhook, now time.Time) []domain.DeliveryJob {
	l.mu.Lock()
	defer l.mu.Unlock()
	prev, again := l.jobs[person]
	l.d.unreserve(bySub(prev))
	if !again {
		l.order = append(l.order, person)
	}
	l.jobs[person] = nil
	subs := make(map[string]domain.Webhook, len(active))
	for _, w := range active {
		subs[w.ID] = w
	}
	out := make([]domain.DeliveryJob, 0, len(ds))
	var leased []domain.DeliveryJob
	for _, dl := range ds {
		job := domain.DeliveryJob{Delivery: dl}
		sub, ok := subs[dl.WebhookID]
		due := dl.NextAttemptAt != nil && !dl.NextAttemptAt.After(now)
		// A local listener on another host is left to a claim by that
		// host's instance.
		mine := !sub.LocalListener || sub.ListenerHost == l.d.w.s.Host
		if ok && due && mine && sub.SecretVersion == dl.SecretVersion && l.d.reserve(dl.WebhookID) {
			until := l.until
			job.LeaseUntil, job.LeaseToken = &until, l.token
			job.TargetURL, job.Secret = sub.TargetURL, sub.Secret
			job.SignatureScheme, job.CurrentSecret, job.Previous = sub.SignatureScheme, sub.Secret, sub.Previous
			job.LocalListener, job.ListenerHost = sub.LocalListener, sub.ListenerHost
			job.Headers, job.MaxPerSecond = sub.Headers, sub.MaxPerSecond
			leased = append(leased, job)
		}
		out = append(out, job)
	}
	l.jobs[person] = leased
	return out
}

func bySub(jobs []domain.DeliveryJob) map[string]int {
	if len(jobs) == 0 {
		return nil
	}
	out := map[string]int{}
	for _, j := range jobs {
		out[j.WebhookID]++
	}
	return out
}

// admit queues the leased deliveries once their transaction committed.
func (l *makerLease) admit() {
	l.mu.Lock()
	defer l.mu.Unlock()
	var all []domain.DeliveryJob
	for _, person := range l.order {
		all = append(all, l.jobs[person]...)
	}
	clear(l.jobs)
	l.order = nil
	if len(all) > 0 {
		l.d.admit(all)
	}
}

// release gives back the room of a transaction that failed.
func (l *makerLease) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, jobs := range l.jobs {
		l.d.unreserve(bySub(jobs))
	}
	clear(l.jobs)
	l.order = nil
}

// startReady starts queued deliveries while slots are free, taking the
// subscriptions in turn, each within its bound and, for one with
// max_per_second, within what this instance leased of the current
// second's budget (leasing more when that is spent).
func (d *dispatcher) startReady() {
	type starting struct {
		job domain.DeliveryJob
		at  time.Time // the attempt's start, for one counted in a second's budget
	}
	type lease struct {
		id          string
		limit, want int
		sec         int64
	}
	var (
		start  []starting
		leases []lease
	)
	now := d.w.clock.Now()
	d.mu.Lock()
	bound := d.bound()
	for progress := true; progress && !d.stopping && d.inflight < d.w.s.Concurrency; {
		progress = false
		kept := d.order[:0]
		for _, id := range d.order {
			q := d.subs[id]
			if q == nil || len(q.queue) == 0 {
				continue
			}
			if q.inflight < bound && d.inflight < d.w.s.Concurrency {
				var at time.Time
				if limit := q.queue[0].MaxPerSecond; limit > 0 {
					if !q.grant.take(now) {
						if !q.grant.leasing {
							q.grant.leasing = true
							leases = append(leases, lease{id, limit, min(len(q.queue), bound-q.inflight), now.Unix()})
						}
						kept = append(kept, id)
						continue
					}
					at = now
				}
				start = append(start, starting{q.queue[0], at})
				q.queue[0] = domain.DeliveryJob{}
				q.queue = q.queue[1:]
				q.inflight++
				d.inflight++
				progress = true
			}
			if len(q.queue) > 0 {
				kept = append(kept, id)
			}
		}
		d.order = kept
		if len(d.order) > 1 {
			// The next pass begins with the next subscription.
			d.order = append(d.order[1:], d.order[0])
		}
	}
	d.mu.Unlock()
	for _, l := range leases {
		go d.leaseRate(l.id, l.limit, l.want, l.sec)
	}
	for _, s := range start {
		go d.run(s.job, s.at)
	}
}

// run makes one attempt (at its given start, or now when zero); its slot
// goes to the next queued delivery at once. Attempts outlive a shutdown
// request: a POST that was sent is recorded.
func (d *dispatcher) run(job domain.DeliveryJob, at time.Time) {
	took, started := d.w.attempt(context.Background(), job, at)
	d.mu.Lock()
	q := d.subs[job.WebhookID]
	q.inflight--
	d.inflight--
	if started {
		q.last = max(took, time.Nanosecond)
		d.finishing++
	} else {
		d.claimed--
		d.dropped++
		d.fire()
	}
	d.mu.Unlock()
	d.startReady()
	d.w.signal()
}

// recorded is told that n finished attempts are written.
func (d *dispatcher) recorded(n int) {
	d.mu.Lock()
	d.claimed -= n
	d.finishing -= n
	d.fire()
	d.mu.Unlock()
	d.w.signal()
}

// waitChange returns a channel closed at the next change of claimed, or
// nil when nothing is claimed.
func (d *dispatcher) waitChange() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.claimed == 0 {
		return nil
	}
	if d.changed == nil {
		d.changed = make(chan struct{})
	}
	return d.changed
}

// runOnce attempts everything due now and returns once every attempt it
// started is recorded. When an attempt was not started because the clock
// ran past its lease, it claims no more: the next call takes the delivery
// again.
func (d *dispatcher) runOnce(ctx context.Context) error {
	d.mu.Lock()
	dropped := d.dropped
	d.mu.Unlock()
	for ctx.Err() == nil {
		d.mu.Lock()
		late := d.dropped != dropped
		d.mu.Unlock()
		if late {
			break
		}
		d.mayHaveMore()
		n, err := d.claim(ctx)
		if err != nil {
			d.idle()
			return err
		}
		// Claim again once an attempt has been recorded (or dropped).
		ch := d.waitChange()
		if ch == nil {
			if n > 0 {
				continue // all recorded already
			}
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
		}
	}
	d.release(d.dropQueued())
	d.idle()
	return nil
}

// dropQueued forgets the claimed deliveries that have not started and
// returns them, for release.
func (d *dispatcher) dropQueued() []domain.DeliveryJob {
	d.mu.Lock()
	var dropped []domain.DeliveryJob
	for _, q := range d.subs {
		dropped = append(dropped, q.queue...)
		d.claimed -= len(q.queue)
		q.queue = nil
	}
	d.order = nil
	d.fire()
	d.mu.Unlock()
	return dropped
}

// releaseTimeout bounds the hand-back of dropped deliveries: should the
// database not take it, their leases run out as after a crash.
const releaseTimeout = 5 * time.Second

// release hands dropped deliveries back to the database at once, so that
// any instance (this one's next start too) claims them without waiting for
// their leases to run out.
func (d *dispatcher) release(jobs []domain.DeliveryJob) {
	if len(jobs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	if err := d.w.jobs.ReleaseDeliveries(ctx, jobs); err != nil {
		d.w.failed("webhook worker: handing back deliveries not attempted; their leases run out instead", err,
			"deliveries", len(jobs))
	}
}

// idle waits until every claimed delivery is recorded or dropped.
func (d *dispatcher) idle() {
	for {
		ch := d.waitChange()
		if ch == nil {
			return
		}
		<-ch
	}
}

// stop starts no attempt from now on and hands the queued deliveries back
// (release); the attempts in flight go on.
func (d *dispatcher) stop() {
	d.mu.Lock()
	d.stopping = true
	d.mu.Unlock()
	d.release(d.dropQueued())
}
