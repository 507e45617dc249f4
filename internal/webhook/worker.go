package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pds-dev/pds/internal/clock"
	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/outage"
	"github.com/pds-dev/pds/internal/store"
)

// Jobs is the durable work the worker draws from: leased bursts and
// deliveries in the project's own tables (store.Webhooks provides it). The
// worker reads every time from its injected clock, never the database's, so
// windows, retry schedules and leases follow the clock tests drive. A
// claimed delivery carries its lease's expiry in LeaseUntil.
type Jobs interface {
	ClaimBursts(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]domain.Burst, error)
	CloseBurst(ctx context.Context, b domain.Burst, build store.DeliveryBuilder) (bool, error)
	CloseBursts(ctx context.Context, bursts []domain.Burst, build store.BurstBuilder) ([]bool, error)
	ActiveSubscriptions(ctx context.Context, accounts []string) (map[string][]domain.Webhook, error)
	ClaimDeliveriesFairly(ctx context.Context, now time.Time, lease time.Duration, c store.DeliveryClaim) ([]domain.DeliveryJob, error)
	ReleaseDeliveries(ctx context.Context, jobs []domain.DeliveryJob) error
	FinishAttempt(ctx context.Context, job domain.DeliveryJob, r store.AttemptResult) error
	FinishAttempts(ctx context.Context, done []store.FinishedAttempt) error
	PruneDeliveries(ctx context.Context, before time.Time, batch int) (int, error)
	PruneChanges(ctx context.Context, before time.Time, batch int) (int, error)
	// LeaseRate and PruneRate keep the per-second budgets of
	// subscriptions with max_per_second in the database (rate_windows),
	// shared by every instance, as the API keys' budgets are
	// (ratelimit.Counter).
	LeaseRate(ctx context.Context, keyID string, windowStart time.Time, limit, want int) (granted, taken int, err error)
	PruneRate(ctx context.Context, before time.Time) error
	// DeliveredStates and KeepDeliveredStates hold what changes compares
	// with (changes.go).
	DeliveredStates(ctx context.Context, accountID string, personIDs []string) (map[string]domain.TrackedMembers, error)
	KeepDeliveredStates(ctx context.Context, accountID string, states map[string]domain.TrackedMembers) error
	// Classify tells a database that cannot serve for now from a defect
	// (store.Store.Classify).
	Classify(err error) error
}

// Renderer renders the data of a delivery: the person's current extended
// view. A person that no longer exists is domain.ErrNotFound.
type Renderer interface {
	Render(ctx context.Context, accountID, personID string, now time.Time) (json.RawMessage, error)
}

// ManyRenderer is a Renderer that also renders several persons of one
// account at once, sharing what they have in common (the account's
// custom fields). A person that no longer exists is left out.
type ManyRenderer interface {
	RenderMany(ctx context.Context, accountID string, personIDs []string, now time.Time) (map[string]json.RawMessage, error)
}

// burstLease is how long a claimed burst stays with its worker; rendering
// takes far less. A worker that dies holding one delays it by this much.
const burstLease = time.Minute

// pruneEvery is how often, by the injected clock, a worker deletes the
// deliveries past retention; pruneBatch bounds one delete statement.
const (
	pruneEvery = time.Hour
	pruneBatch = 500
)

// maxResponseRead bounds how much of a receiver's response is read (and
// thrown away) so the connection can be reused.
const maxResponseRead = 64 << 10

// Worker closes due bursts into deliveries and attempts due deliveries.
// Any number of workers, in one process or many, may share one database.
//
// Attempts run in a pool of Settings.Concurrency slots, at most
// Settings.PerSubscription of them for one subscription; a slot goes to the
// next due delivery as soon as it is free, so a slow or silent receiver
// holds only its own subscription's slots (see dispatch.go). Finished
// attempts are recorded in batches, one transaction for many (recorder.go).
type Worker struct {
	jobs   Jobs
	render Renderer
	clock  clock.Clock
	s      Settings
	client *http.Client
	// local is the client of local listeners' deliveries (loopback only);
	// client, the guarded one, carries every other.
	local *http.Client
	log   *slog.Logger
	obs   Observer
	// outages hears of passes failed for a database that cannot serve,
	// which it logs once per outage; nil logs each.
	outages *outage.Log

	d   *dispatcher
	rec *recorder
	// wake tells Run's dispatcher that due work may have appeared.
	wake chan struct{}

	pruneMu   sync.Mutex
	nextPrune time.Time // zero: prune at the first pass
}

// Observer hears what the worker does, for metrics; nil hears nothing.
type Observer interface {
	// Attempt reports a finished attempt: its outcome (succeeded, retry,
	// failed, gone, or error when nothing answered) and its duration.
	Attempt(outcome string, took time.Duration)
	// Delivered reports a delivery's 2xx, recorded sinceClose after its
	// burst closed (the delivery was made).
	Delivered(sinceClose time.Duration)
}

// NewWorker builds a worker; settings left zero take their defaults.
func NewWorker(jobs Jobs, render Renderer, clk clock.Clock, s Settings, log *slog.Logger) (*Worker, error) {
	s = s.WithDefaults()
	client, err := NewClient(s)
	if err != nil {
		return nil, err
	}
	local, err := NewLocalClient(s)
	if err != nil {
		return nil, err
	}
	w := &Worker{jobs: jobs, render: render, clock: clk, s: s, client: client, local: local, log: log,
		wake: make(chan struct{}, 1)}
	w.d = newDispatcher(w)
	w.rec = newRecorder(w)
	return w, nil
}

// Observe sets the worker's observer; call it before Run.
func (w *Worker) Observe(o Observer) { w.obs = o }

// ReportOutages has the worker tell l of work that failed because the
// database could not serve, instead of logging an error each time: l logs
// the outage once as it begins and once as it ends. Call it before Run.
func (w *Worker) ReportOutages(l *outage.Log) { w.outages = l }

// retryFirst and retryMost pace untilServed.
const (
	retryFirst = 100 * time.Millisecond
	retryMost  = 2 * time.Second
)

// untilServed runs op, and runs it again while it fails because the
// database cannot serve for now, as long as the wait before the next try
// ends before until (by the worker's clock; nil: no retry). Work that
// holds a lease (claimed bursts, attempts to record) is finished once the
// database is back, instead of waiting, undone, for its lease to run out.
func (w *Worker) untilServed(what string, until *time.Time, op func() error) error {
	err := op()
	for wait := retryFirst; err != nil; wait = min(2*wait, retryMost) {
		var ue *domain.UnavailableError
		if !errors.As(w.jobs.Classify(err), &ue) || until == nil || !w.clock.Now().Add(wait).Before(*until) {
			return err
		}
		w.failed(what, err)
		time.Sleep(wait)
		err = op()
	}
	return nil
}

// failed logs work that failed: a database that cannot serve is the outage
// log's to tell (ReportOutages), anything else is an error of its own.
func (w *Worker) failed(msg string, err error, attrs ...any) {
	var ue *domain.UnavailableError
	if w.outages != nil && errors.As(w.jobs.Classify(err), &ue) {
		w.outages.Failed(ue)
		return
	}
	w.log.Error(msg, append(attrs, "error", err.Error())...)
}

// A delivery's lease covers, by the worker's clock, the wait for its
// attempt to start (slack: a claim takes no more than its subscription can
// start within one attempt's time), the attempt (bounded by the timeout)
// and recording it.
const (
	startSlack  = 30 * time.Second
	recordSlack = 30 * time.Second
)

func (w *Worker) deliveryLease() time.Duration { return startSlack + w.s.Timeout + recordSlack }

// leaseCovers reports whether an attempt starting at ends, timeout and
// recording included, while the job's lease still holds. Past its lease
// another instance may claim the delivery and POST it too.
func (w *Worker) leaseCovers(job domain.DeliveryJob, at time.Time) bool {
	return job.LeaseUntil != nil && !at.Add(w.s.Timeout+recordSlack).After(*job.LeaseUntil)
}

// signal wakes Run's dispatcher.
func (w *Worker) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Run works until ctx ends: bursts are closed as they fall due, and free
// attempt slots are filled with due deliveries as soon as they free up
// (and at least every PollInterval). On the way out it starts nothing new
// and lets attempts in flight finish and be recorded.
func (w *Worker) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { w.runBursts(ctx) })
	tick := time.NewTicker(w.s.PollInterval)
	defer tick.Stop()
	for ctx.Err() == nil {
		if _, err := w.d.claim(ctx); err != nil && ctx.Err() == nil {
			w.failed("webhook worker: claiming deliveries", err)
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
			w.d.mayHaveMore()
		case <-w.wake:
		}
	}
	// The deliveries claimed and not started go back at once, for another
	// instance (or the next start) to send; the burst closing under way
	// and the attempts in flight finish and are recorded.
	w.d.stop()
	wg.Wait()
	w.d.idle()
}

// runBursts closes due bursts every PollInterval, waking the dispatcher
// for the deliveries they make, and prunes once in a while. A pass under
// way when ctx ends is finished, not cut: its bursts would otherwise stay
// leased, undelivered, for burstLease.
func (w *Worker) runBursts(ctx context.Context) {
	work := context.WithoutCancel(ctx)
	tick := time.NewTicker(w.s.PollInterval)
	defer tick.Stop()
	for {
		if err := w.closeDueBursts(ctx, work); err != nil {
			w.failed("webhook worker: closing bursts", err)
		}
		if err := w.pruneIfDue(ctx); err != nil && ctx.Err() == nil {
			w.failed("webhook worker", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// RunOnce closes every burst due now and makes every attempt due now,
// returning when none is left (retries scheduled later wait for a later
// call) and every attempt it started is recorded. Attempts run as in Run:
// a slot is refilled as soon as it frees, with no barrier between claims.
// At most once per pruneEvery it then deletes the deliveries past
// retention.
func (w *Worker) RunOnce(ctx context.Context) error {
	if err := w.closeDueBursts(ctx, ctx); err != nil {
		return err
	}
	if err := w.d.runOnce(ctx); err != nil {
		return err
	}
	return w.pruneIfDue(ctx)
}

// pruneIfDue deletes the finished deliveries whose last activity is older
// than the retention. A failed run waits for the next turn like a
// successful one, so a broken database is not hammered every poll.
func (w *Worker) pruneIfDue(ctx context.Context) error {
	now := w.clock.Now()
	w.pruneMu.Lock()
	due := !now.Before(w.nextPrune)
	if due {
		w.nextPrune = now.Add(pruneEvery)
	}
	w.pruneMu.Unlock()
	if !due {
		return nil
	}
	cutoff := now.Add(-w.s.Retention)
	n, err := w.jobs.PruneDeliveries(ctx, cutoff, pruneBatch)
	if n > 0 {
		w.log.Info("webhook deliveries pruned", "deleted", n, "last_activity_before", cutoff.Format(time.RFC3339))
	}
	if err != nil {
		return fmt.Errorf("prune deliveries: %w", err)
	}
	if err := w.pruneRateWindows(ctx, now); err != nil {
		return fmt.Errorf("prune rate windows: %w", err)
	}
	// The change feed's tombstones, as old as its cursors may be.
	tombstones := now.Add(-w.s.ChangeRetention)
	for {
		n, err := w.jobs.PruneChanges(ctx, tombstones, pruneBatch)
		if err != nil {
			return fmt.Errorf("prune the change feed's tombstones: %w", err)
		}
		if n > 0 {
			w.log.Info("change feed tombstones pruned", "deleted", n, "erased_before", tombstones.Format(time.RFC3339))
		}
		if n < pruneBatch {
			return nil
		}
	}
}

// burstClosers is how many claim-and-close loops run side by side, so that
// one's claim overlaps another's rendering and their commits are shared
// (SQLite's group commit) rather than taken in turn.
const burstClosers = 2

// closeDueBursts closes every burst due now, until stop ends; work is the
// context of the claims and closes themselves.
func (w *Worker) closeDueBursts(stop, work context.Context) error {
	errs := make([]error, burstClosers)
	var wg sync.WaitGroup
	for i := range burstClosers {
		wg.Go(func() { errs[i] = w.closeDueBurstsLoop(stop, work) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (w *Worker) closeDueBurstsLoop(stop, ctx context.Context) error {
	for stop.Err() == nil {
		bursts, err := w.jobs.ClaimBursts(ctx, w.clock.Now(), burstLease, w.s.Batch)
		if err != nil {
			return err
		}
		if len(bursts) > 0 {
			w.closeBursts(ctx, bursts)
			w.d.mayHaveMore()
			w.signal()
		}
		if len(bursts) < w.s.Batch {
			return nil
		}
	}
	return nil
}

// closeBursts closes claimed bursts in one transaction, rendering each
// person once, before the transaction: the transaction holds the bursts'
// rows, which writers of those persons wait for, and rendering inside it
// would take a second connection from a pool those writers may have taken
// whole (no request nor job holds two connections at once). Only persons
// whose burst a subscription listens to are rendered, as read before the
// transaction; should the transaction find a listener that read did not
// (a subscription made meanwhile), it is given up and run again with the
// persons rendered (errRenderFirst). When the batch fails as a whole, each
// burst is closed on its own, so that one bad burst holds up only itself.
func (w *Worker) closeBursts(ctx context.Context, bursts []domain.Burst) {
	now := w.clock.Now()
	// The claim's lease began a moment ago; it ends no earlier than this.
	claimEnds := now.Add(burstLease - time.Second)
	var err error
	for range renderRounds {
		var r rendered
		if r, err = w.preRender(ctx, bursts, now); err != nil {
			break
		}
		lease := w.d.newMakerLease(now.Add(w.deliveryLease()))
		var closed []bool
		err = w.untilServed("webhook bursts: closing a batch", &claimEnds, func() error {
			var err error
			closed, err = w.jobs.CloseBursts(ctx, bursts, func(b domain.Burst, active []domain.Webhook) ([]domain.DeliveryJob, error) {
				ds, err := w.build(ctx, b, active, now, r)
				if err != nil {
					return nil, err
				}
				return lease.take(b.PersonID, ds, active, now), nil
			})
			if err != nil {
				lease.release()
			}
			return err
		})
		if err == nil {
			lease.admit()
			w.keepStates(ctx, r, bursts, closed)
			w.closeLeftOver(ctx, bursts, closed, now)
			return
		}
		if !errors.Is(err, errRenderFirst) {
			break
		}
	}
	var ue *domain.UnavailableError
	if errors.As(w.jobs.Classify(err), &ue) {
		// Burst by burst would fail the same way; the lease runs out and
		// a later pass closes them.
		w.failed("webhook bursts: closing a batch", err, "bursts", len(bursts))
		return
	}
	w.log.Warn("webhook bursts: closing a batch failed; closing them one by one", "bursts", len(bursts), "error", err.Error())
	for _, b := range bursts {
		if err := w.closeBurst(ctx, b, now); err != nil {
			// The lease runs out and another pass tries again.
			w.failed("webhook burst", err, "person_id", b.PersonID, "account_id", b.AccountID)
		}
	}
}

// closeLeftOver closes on its own each burst the batch did not close: one
// a writer held at that moment, which the batch passed over rather than
// wait for. Closed alone, it waits for that writer, holding nothing else,
// for leftOverWait at most, all of them; a burst the batch handed back or
// whose lease ran out is found so again and left.
func (w *Worker) closeLeftOver(ctx context.Context, bursts []domain.Burst, closed []bool, now time.Time) {
	wait, cancel := context.WithTimeout(ctx, leftOverWait)
	defer cancel()
	for i, b := range bursts {
		if i >= len(closed) || closed[i] || wait.Err() != nil {
			continue
		}
		err := w.closeBurst(wait, b, now)
		if err != nil && wait.Err() == nil {
			// The lease runs out and another pass tries again.
			w.failed("webhook burst", err, "person_id", b.PersonID, "account_id", b.AccountID)
		}
	}
}

// leftOverWait bounds the waits of the bursts closed on their own for the
// writers that held their rows: a request's transaction ends within its
// deadline, and a burst held longer (by an import) is left to a later
// claim.
const leftOverWait = 5 * time.Second

// renderRounds bounds the transactions a close gives up for a person it
// had not rendered (errRenderFirst); each round reads the subscriptions
// afresh.
const renderRounds = 3

// errRenderFirst gives up a close's transaction that needs a person
// rendered before it: it never renders inside its transaction.
var errRenderFirst = errors.New("webhook: a closing burst needs its person rendered before the transaction")

// rendered holds the persons preRender rendered, by person; a person it
// rendered for that is missing from data no longer exists. For the
// accounts with a subscription that includes changes (keep), starts are
// what the persons' last closed bursts told (delivered_states).
type rendered struct {
	data   map[string]json.RawMessage
	wanted map[string]bool
	keep   map[string]bool
	starts map[string]domain.TrackedMembers
}

// of is the data of b's person as rendered before the transaction.
func (r rendered) of(b domain.Burst) (json.RawMessage, error) {
	if !r.wanted[b.PersonID] {
		return nil, errRenderFirst
	}
	data, ok := r.data[b.PersonID]
	if !ok {
		return nil, domain.ErrNotFound
	}
	return data, nil
}

// preRender renders the persons of the bursts that an active subscription
// of their account listens to (the burst's event in its events), and every
// person of an account with a subscription that includes changes, whose
// kept states it reads as the bursts' starts.
func (w *Worker) preRender(ctx context.Context, bursts []domain.Burst, now time.Time) (rendered, error) {
	r := rendered{data: map[string]json.RawMessage{}, wanted: map[string]bool{}, keep: map[string]bool{},
		starts: map[string]domain.TrackedMembers{}}
	accounts := map[string]bool{}
	for _, b := range bursts {
		accounts[b.AccountID] = true
	}
	active, err := w.jobs.ActiveSubscriptions(ctx, slices.Collect(maps.Keys(accounts)))
	if err != nil {
		return r, err
	}
	byAccount := map[string][]string{}
	for acc, subs := range active {
		r.keep[acc] = slices.ContainsFunc(subs, func(sub domain.Webhook) bool { return sub.IncludeChanges })
	}
	for _, b := range bursts {
		// Where changes are included, every closing burst is rendered, so
		// that the next one's start is known whichever events are listened to.
		if r.keep[b.AccountID] || slices.ContainsFunc(active[b.AccountID], func(sub domain.Webhook) bool { return sub.Wants(b.Event) }) {
			byAccount[b.AccountID] = append(byAccount[b.AccountID], b.PersonID)
		}
	}
	for acc, ids := range byAccount {
		got, err := w.renderMany(ctx, acc, ids, now)
		if err != nil {
			return r, err
		}
		maps.Copy(r.data, got)
		for _, id := range ids {
			r.wanted[id] = true
		}
		if r.keep[acc] {
			starts, err := w.jobs.DeliveredStates(ctx, acc, ids)
			if err != nil {
				return r, err
			}
			maps.Copy(r.starts, starts)
		}
	}
	return r, nil
}

// renderMany renders persons of one account, in one pass when the
// renderer can (ManyRenderer); a person that no longer exists is left out.
func (w *Worker) renderMany(ctx context.Context, accountID string, ids []string, now time.Time) (map[string]json.RawMessage, error) {
	if many, ok := w.render.(ManyRenderer); ok {
		return many.RenderMany(ctx, accountID, ids, now)
	}
	out := make(map[string]json.RawMessage, len(ids))
	for _, id := range ids {
		data, err := w.render.Render(ctx, accountID, id, now)
		if errors.Is(err, domain.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[id] = data
	}
	return out, nil
}

// closeBurst closes one burst in a transaction of its own, its person
// rendered before it as closeBursts renders them.
func (w *Worker) closeBurst(ctx context.Context, b domain.Burst, now time.Time) error {
	var err error
	for range renderRounds {
		var r rendered
		if r, err = w.preRender(ctx, []domain.Burst{b}, now); err != nil {
			return err
		}
		var delivered bool
		delivered, err = w.jobs.CloseBurst(ctx, b, func(active []domain.Webhook) ([]domain.Delivery, error) {
			return w.build(ctx, b, active, now, r)
		})
		if err == nil {
			w.keepStates(ctx, r, []domain.Burst{b}, []bool{delivered})
		}
		if !errors.Is(err, errRenderFirst) {
			return err
		}
	}
	return err
}

// build makes one delivery per active subscription that lists exactly the
// burst's event (spec section 6.1), with the person rendered once, and
// only when some subscription listens.
func (w *Worker) build(ctx context.Context, b domain.Burst, active []domain.Webhook, now time.Time, r rendered) ([]domain.Delivery, error) {
	active = slices.DeleteFunc(slices.Clone(active), func(sub domain.Webhook) bool { return !sub.Wants(b.Event) })
	if len(active) == 0 {
		return nil, nil
	}
	data, err := r.of(b)
	if errors.Is(err, domain.ErrNotFound) {
		return nil, nil // nothing left to tell
	}
	if err != nil {
		return nil, err
	}
	out := make([]domain.Delivery, 0, len(active))
	for _, sub := range active {
		id := NewDeliveryID()
		body, err := Body(id, b.Event, now, data)
		if err != nil {
			return nil, err
		}
		if sub.IncludeChanges {
			body = domain.WithChanges(body, r.changes(b, data))
		}
		first := now.Add(w.s.Jitter(w.s.Schedule[0]))
		out = append(out, domain.Delivery{
			ID: id, AccountID: b.AccountID, WebhookID: sub.ID, Event: b.Event, PersonID: b.PersonID,
			Body: body, SecretVersion: sub.SecretVersion, Status: domain.DeliveryPending,
			NextAttemptAt: &first, CreatedAt: now,
		})
	}
	return out, nil
}

// attempt POSTs a delivery once, signed at this attempt's time, and hands
// the outcome to the recorder. It starts only while the lease holds long
// enough for the attempt and its recording; otherwise nothing is sent, so
// nothing is recorded, and the delivery waits for the next claim once the
// lease has run out. Within its lease no other instance can claim the
// delivery, so the attempt's record (which needs the lease token) is
// always written. It reports how long the attempt took (0: not started).
func (w *Worker) attempt(ctx context.Context, job domain.DeliveryJob, at time.Time) (time.Duration, bool) {
	if at.IsZero() {
		at = w.clock.Now()
	}
	if job.LocalListener && job.ListenerHost != w.s.Host {
		// Claims and makers never hand it one; its target is another
		// machine's loopback. Its lease runs out and that host's
		// instance takes it.
		w.log.Warn("webhook attempt not started: a local listener on another host",
			"delivery_id", job.ID, "webhook_id", job.WebhookID, "listener_host", job.ListenerHost)
		return 0, false
	}
	if !w.leaseCovers(job, at) {
		w.log.Warn("webhook attempt not started: its lease ran out before it could start",
			"delivery_id", job.ID, "webhook_id", job.WebhookID, "account_id", job.AccountID)
		return 0, false
	}
	code, headers, took, err := w.post(ctx, job, at)
	r := w.s.Decide(job.Delivery, code, err, at)
	r.Attempt.DurationMS, r.Attempt.RequestHeaders = took.Milliseconds(), headers
	w.rec.add(job, r)
	return took, true
}

// recorded logs an attempt once its record is written.
func (w *Worker) recorded(ctx context.Context, job domain.DeliveryJob, r store.AttemptResult) {
	level := slog.LevelInfo
	if r.Status != domain.DeliverySucceeded {
		level = slog.LevelWarn
	}
	if w.obs != nil {
		w.obs.Attempt(outcome(r), time.Duration(r.Attempt.DurationMS)*time.Millisecond)
		if r.Status == domain.DeliverySucceeded {
			w.obs.Delivered(w.clock.Now().Sub(job.CreatedAt))
		}
	}
	if !w.log.Enabled(ctx, level) {
		return
	}
	attrs := []any{"delivery_id", job.ID, "webhook_id", job.WebhookID, "account_id", job.AccountID,
		"attempt", job.Attempts + 1, "status", r.Status, "duration_ms", r.Attempt.DurationMS}
	if r.Error != nil {
		attrs = append(attrs, "error", *r.Error)
	}
	w.log.Log(ctx, level, "webhook attempt", attrs...)
}

// outcome names an attempt's result for metrics.
func outcome(r store.AttemptResult) string {
	switch {
	case r.Status == domain.DeliverySucceeded:
		return "succeeded"
	case r.Gone:
		return "gone"
	case r.Attempt.StatusCode == nil:
		return "error"
	case r.Status == domain.DeliveryPending:
		return "retry"
	}
	return "failed"
}

// post sends the request and returns, with what came back, the headers it
// set on it (sentHeaders); the duration is real elapsed time, since the
// injected clock stands still in tests.
func (w *Worker) post(ctx context.Context, job domain.DeliveryJob, at time.Time) (int, map[string]string, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, job.TargetURL, bytes.NewReader(job.Body))
	if err != nil {
		return 0, nil, 0, err
	}
	setCustomHeaders(req.Header, job.Headers)
	if err := setAttemptHeaders(req.Header, job, at); err != nil {
		return 0, nil, 0, err
	}
	headers := sentHeaders(req.Header)
	redactCustom(headers, job.Headers)
	client := w.client
	if job.LocalListener {
		client = w.local
	}
	start := time.Now()
	res, err := client.Do(req)
	if err != nil {
		return 0, headers, time.Since(start), err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, maxResponseRead))
	res.Body.Close()
	return res.StatusCode, headers, time.Since(start), nil
}

// sentHeaders is the record of the headers an attempt set on its request,
// each name's values joined by ", ". The transport adds only what HTTP
// itself needs on the wire (Host, Content-Length, Accept-Encoding), which
// is left out. Nothing here holds the secret; the store keeps each
// signature without its value (domain.RedactSignatures).
func sentHeaders(h http.Header) map[string]string {
	out := make(map[string]string, len(h))
	for name, values := range h {
		out[name] = strings.Join(values, ", ")
	}
	return out
}
