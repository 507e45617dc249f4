package webhook

import (
	"context"
	"sync"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// maxRecord bounds the attempts recorded in one transaction.
const maxRecord = 100

// The recorder writes finished attempts in batches: whatever finished while
// the previous batch was being written goes into the next, one transaction
// for many (store.FinishAttempts). It runs only while there is something to
// write, and waits for nothing but the database. When a batch fails as a
// whole, its attempts are recorded one by one, so one bad record holds up
// only itself.
type recorder struct {
	w       *Worker
	mu      sync.Mutex
	buf     []store.FinishedAttempt
	running bool
}

func newRecorder(w *Worker) *recorder { return &recorder{w: w} }

// add queues an attempt's record.
func (r *recorder) add(job domain.DeliveryJob, res store.AttemptResult) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = append(r.buf, store.FinishedAttempt{Job: job, Result: res})
	if !r.running {
		r.running = true
		go r.loop()
	}
}

func (r *recorder) loop() {
	for {
		r.mu.Lock()
		if len(r.buf) == 0 {
			r.running = false
			r.mu.Unlock()
			return
		}
		n := min(len(r.buf), maxRecord)
		batch := append([]store.FinishedAttempt(nil), r.buf[:n]...)
		r.buf = append(r.buf[:0], r.buf[n:]...)
		r.mu.Unlock()
		r.write(batch)
		r.w.d.recorded(len(batch))
	}
}

// write records a batch. Records are written after the attempt whatever
// happens to the worker's context: a POST that was sent is recorded.
func (r *recorder) write(batch []store.FinishedAttempt) {
	ctx := context.Background()
	// A receiver that got its POST would get it again, once the lease ran
	// out, from whichever instance claimed the delivery next: while the
	// database cannot serve, the record is written again until it can, or
	// until a lease of the batch runs out.
	until := batch[0].Job.LeaseUntil
	for _, f := range batch {
		if f.Job.LeaseUntil == nil || until == nil || f.Job.LeaseUntil.Before(*until) {
			until = f.Job.LeaseUntil
		}
	}
	err := r.w.untilServed("webhook attempts: recording", until, func() error {
		return r.w.jobs.FinishAttempts(ctx, batch)
	})
	if err == nil {
		r.w.outages.Served(true)
		for _, f := range batch {
			r.w.recorded(ctx, f.Job, f.Result)
		}
		return
	}
	if len(batch) > 1 {
		r.w.log.Warn("webhook attempts: recording a batch failed; recording them one by one", "attempts", len(batch), "error", err.Error())
	}
	for _, f := range batch {
		if len(batch) > 1 {
			err = r.w.jobs.FinishAttempt(ctx, f.Job, f.Result)
		}
		if err != nil {
			r.w.log.Error("webhook attempt not recorded", "delivery_id", f.Job.ID, "webhook_id", f.Job.WebhookID, "error", err.Error())
			continue
		}
		r.w.recorded(ctx, f.Job, f.Result)
	}
}
