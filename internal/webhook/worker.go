package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/pds-dev/pds/internal/clock"
	"github.com/pds-dev/pds/internal/domain"
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
	ClaimDeliveries(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]domain.DeliveryJob, error)
	FinishAttempt(ctx context.Context, job domain.DeliveryJob, r store.AttemptResult) error
	PruneDeliveries(ctx context.Context, before time.Time, batch int) (int, error)
}

// Renderer renders the data of a delivery: the person's current extended
// view. A person that no longer exists is domain.ErrNotFound.
type Renderer interface {
	Render(ctx context.Context, accountID, personID string, now time.Time) (json.RawMessage, error)
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
type Worker struct {
	jobs   Jobs
	render Renderer
	clock  clock.Clock
	s      Settings
	client *http.Client
	log    *slog.Logger

	pruneMu   sync.Mutex
	nextPrune time.Time // zero: prune at the first pass
}

// NewWorker builds a worker; settings left zero take their defaults.
func NewWorker(jobs Jobs, render Renderer, clk clock.Clock, s Settings, log *slog.Logger) (*Worker, error) {
	s = s.WithDefaults()
	client, err := NewClient(s)
	if err != nil {
		return nil, err
	}
	return &Worker{jobs: jobs, render: render, clock: clk, s: s, client: client, log: log}, nil
}

// A delivery's lease covers, by the worker's clock, the wait for its
// attempt to start (slack: a claim takes only what starts at once), the
// attempt (bounded by the timeout) and recording it.
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

// Run works until ctx ends, looking for due work every PollInterval. On the
// way out it starts nothing new and lets attempts in flight finish.
func (w *Worker) Run(ctx context.Context) {
	tick := time.NewTicker(w.s.PollInterval)
	defer tick.Stop()
	for {
		if err := w.RunOnce(ctx); err != nil && ctx.Err() == nil {
			w.log.Error("webhook worker", "error", err.Error())
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
// call). Attempts started before ctx ends are finished and recorded. At
// most once per pruneEvery it then deletes the deliveries past retention.
func (w *Worker) RunOnce(ctx context.Context) error {
	if err := w.closeDueBursts(ctx); err != nil {
		return err
	}
	if err := w.attemptDueDeliveries(ctx); err != nil {
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
	return nil
}

func (w *Worker) closeDueBursts(ctx context.Context) error {
	for ctx.Err() == nil {
		bursts, err := w.jobs.ClaimBursts(ctx, w.clock.Now(), burstLease, w.s.Batch)
		if err != nil {
			return err
		}
		for _, b := range bursts {
			if err := w.closeBurst(ctx, b); err != nil {
				// The lease runs out and another pass tries again.
				w.log.Error("webhook burst", "person_id", b.PersonID, "account_id", b.AccountID, "error", err.Error())
			}
		}
		if len(bursts) < w.s.Batch {
			return nil
		}
	}
	return nil
}

// closeBurst makes one delivery per active subscription that lists exactly
// the burst's event (spec section 6.1), with the person rendered once, and
// only when some subscription listens.
func (w *Worker) closeBurst(ctx context.Context, b domain.Burst) error {
	now := w.clock.Now()
	_, err := w.jobs.CloseBurst(ctx, b, func(active []domain.Webhook) ([]domain.Delivery, error) {
		active = slices.DeleteFunc(active, func(sub domain.Webhook) bool { return !sub.Wants(b.Event) })
		if len(active) == 0 {
			return nil, nil
		}
		data, err := w.render.Render(ctx, b.AccountID, b.PersonID, now)
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
			first := now.Add(w.s.Jitter(w.s.Schedule[0]))
			out = append(out, domain.Delivery{
				ID: id, AccountID: b.AccountID, WebhookID: sub.ID, Event: b.Event, PersonID: b.PersonID,
				Body: body, SecretVersion: sub.SecretVersion, Status: domain.DeliveryPending,
				NextAttemptAt: &first, CreatedAt: now,
			})
		}
		return out, nil
	})
	return err
}

func (w *Worker) attemptDueDeliveries(ctx context.Context) error {
	// Attempts and their records outlive a shutdown request: a POST that
	// was sent is recorded.
	attemptCtx := context.WithoutCancel(ctx)
	// Claim only what can start now: every attempt slot is free when a
	// claim is made, so each claimed delivery starts at once, well inside
	// its lease. A larger claim would leave its tail waiting for a slot
	// while the lease ran out, and another instance would claim and POST
	// those deliveries too.
	limit := min(w.s.Batch, w.s.Concurrency)
	for ctx.Err() == nil {
		jobs, err := w.jobs.ClaimDeliveries(ctx, w.clock.Now(), w.deliveryLease(), limit)
		if err != nil {
			return err
		}
		var wg sync.WaitGroup
		for _, job := range jobs {
			wg.Go(func() { w.attempt(attemptCtx, job) })
		}
		wg.Wait()
		if len(jobs) < limit {
			return nil
		}
	}
	return nil
}

// attempt POSTs a delivery once, signed at this attempt's time, and records
// the outcome. It starts only while the lease holds long enough for the
// attempt and its recording; otherwise nothing is sent, so nothing is
// recorded, and the delivery waits for the next claim once the lease has run
// out. Within its lease no other instance can claim the delivery, so the
// attempt's record (which needs the lease token) is always written.
func (w *Worker) attempt(ctx context.Context, job domain.DeliveryJob) {
	at := w.clock.Now()
	if !w.leaseCovers(job, at) {
		w.log.Warn("webhook attempt not started: its lease ran out before it could start",
			"delivery_id", job.ID, "webhook_id", job.WebhookID, "account_id", job.AccountID)
		return
	}
	code, took, err := w.post(ctx, job, at)
	r := w.s.Decide(job.Delivery, code, err, at)
	r.Attempt.DurationMS = took.Milliseconds()
	if err := w.jobs.FinishAttempt(ctx, job, r); err != nil {
		w.log.Error("webhook attempt not recorded", "delivery_id", job.ID, "webhook_id", job.WebhookID, "error", err.Error())
		return
	}
	level := slog.LevelInfo
	if r.Status != domain.DeliverySucceeded {
		level = slog.LevelWarn
	}
	attrs := []any{"delivery_id", job.ID, "webhook_id", job.WebhookID, "account_id", job.AccountID,
		"attempt", job.Attempts + 1, "status", r.Status, "duration_ms", took.Milliseconds()}
	if r.Error != nil {
		attrs = append(attrs, "error", *r.Error)
	}
	w.log.Log(ctx, level, "webhook attempt", attrs...)
}

// post sends the request; the duration is real elapsed time, since the
// injected clock stands still in tests.
func (w *Worker) post(ctx context.Context, job domain.DeliveryJob, at time.Time) (int, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, job.TargetURL, bytes.NewReader(job.Body))
	if err != nil {
		return 0, 0, err
	}
	SetHeaders(req.Header, job.Delivery, job.Secret, at)
	start := time.Now()
	res, err := w.client.Do(req)
	if err != nil {
		return 0, time.Since(start), err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, maxResponseRead))
	res.Body.Close()
	return res.StatusCode, time.Since(start), nil
}
