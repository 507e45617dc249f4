package webhook_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/clock"
	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/internal/webhook"
	"github.com/pds-dev/pds/internal/webhook/webhooktest"
)

// lateStart is a store whose next claim of deliveries after pause is set
// is followed by that pause (the clock moves on) before the worker gets to
// attempt them. Deliveries a closing burst makes leased to the worker are
// a claim too: the pause follows their transaction the same way.
type lateStart struct {
	store.Store
	clock *clock.Fake
	mu    sync.Mutex
	pause time.Duration
}

func (l *lateStart) pauseAfterNextClaim(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pause = d
}

// takePause advances the clock by the pause set, once.
func (l *lateStart) takePause() {
	l.mu.Lock()
	pause := l.pause
	l.pause = 0
	l.mu.Unlock()
	l.clock.Advance(pause)
}

func (l *lateStart) ClaimDeliveriesFairly(ctx context.Context, now time.Time, lease time.Duration, c store.DeliveryClaim) ([]domain.DeliveryJob, error) {
	jobs, err := l.Store.ClaimDeliveriesFairly(ctx, now, lease, c)
	if len(jobs) > 0 {
		l.takePause()
	}
	return jobs, err
}

func (l *lateStart) CloseBursts(ctx context.Context, bursts []domain.Burst, build store.BurstBuilder) ([]bool, error) {
	leased := false
	closed, err := l.Store.CloseBursts(ctx, bursts, func(b domain.Burst, active []domain.Webhook) ([]domain.DeliveryJob, error) {
		jobs, err := build(b, active)
		for _, j := range jobs {
			leased = leased || j.LeaseToken != ""
		}
		return jobs, err
	})
	if leased && err == nil {
		l.takePause()
	}
	return closed, err
}

// TestAnAttemptStartsOnlyWhileItsLeaseHolds: a claimed delivery whose lease
// has run out before its attempt starts, or would run out before the attempt
// could end and be recorded, is not POSTed and nothing is recorded; the next
// claim, once the lease has run out, makes the one attempt.
func TestAnAttemptStartsOnlyWhileItsLeaseHolds(t *testing.T) {
	const timeout = 15 * time.Second
	lease := timeout + time.Minute // 30 s to start, the timeout, 30 s to record
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rc := webhooktest.NewReceiver(t)
		s := webhooktest.Settings(rc)
		s.Timeout = timeout
		r := start(t, eng, s)
		jobs := &lateStart{Store: r.st, clock: r.clock}
		late, err := webhook.NewWorker(jobs, r.render, r.clock, s, quiet)
		if err != nil {
			t.Fatal(err)
		}
		sub := r.subscribe(r.acc, rc.URL, "person.created")
		for i, c := range []struct {
			name  string
			pause time.Duration
		}{
			{"expired", lease},
			{"too short for the attempt", 30*time.Second + time.Millisecond},
		} {
			r.touch(r.acc, fmt.Sprintf("p%d", i))
			r.clock.Advance(window)
			claimed := r.clock.Now()
			jobs.pauseAfterNextClaim(c.pause)
			if err := late.RunOnce(context.Background()); err != nil {
				t.Fatal(err)
			}
			wantRequests(t, rc, i)
			id := r.deliveries(sub)[0].ID // the newest
			d, attempts, err := r.st.GetDelivery(context.Background(), r.acc, sub.ID, id)
			if err != nil || d.Status != domain.DeliveryPending || d.Attempts != 0 || len(attempts) != 0 {
				t.Fatalf("%s: after a late start: %+v %+v %v", c.name, d, attempts, err)
			}

			if r.clock.Now().Before(claimed.Add(lease)) {
				r.clock.Set(claimed.Add(lease - time.Millisecond))
				r.run()
				wantRequests(t, rc, i) // still leased
			}
			r.clock.Set(claimed.Add(lease))
			r.run()
			req := wantRequests(t, rc, i+1)[i]
			d, attempts, err = r.st.GetDelivery(context.Background(), r.acc, sub.ID, id)
			if err != nil || req.Header.Get("Service-Delivery-Id") != id || d.Status != domain.DeliverySucceeded ||
				d.Attempts != 1 || len(attempts) != 1 || !attempts[0].AttemptedAt.Equal(claimed.Add(lease)) {
				t.Fatalf("%s: the attempt after the lease: %+v %+v %v", c.name, d, attempts, err)
			}
		}
	})
}

// fastClock runs speed times faster than real time from start, so that
// leases, which the worker reads from its clock, run out while real network
// timeouts run.
type fastClock struct {
	start, began time.Time
	speed        time.Duration
}

func (c fastClock) Now() time.Time { return c.start.Add(time.Since(c.began) * c.speed) }

// TestTwoInstancesNeverPostADeliveryTwice: two instances on one database,
// a receiver that never answers (every attempt times out), one attempt per
// delivery, and many deliveries due at once, more than the instances attempt
// at a time. Each delivery id is POSTed once, and the log counts every POST.
func TestTwoInstancesNeverPostADeliveryTwice(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rc := webhooktest.NewReceiver(t)
		rc.Respond(func(_ int, req *http.Request) int {
			<-req.Context().Done() // the client has given up
			return http.StatusServiceUnavailable
		})
		s := webhooktest.Settings(rc)
		// A real timeout long enough for a TLS handshake on a busy machine,
		// so that every attempt reaches the receiver.
		s.Timeout = 2 * time.Second
		s.Concurrency = 4
		// One attempt, due an hour after its burst closes, so that closing
		// the bursts attempts nothing.
		s.Schedule = []time.Duration{time.Hour}
		s.PollInterval = 20 * time.Millisecond
		db := eng.NewDatabase(t)
		setup := newRig(t, eng.Open(t, db), clock.NewFake(t0), s)
		setup.acc = setup.account()
		sub := setup.subscribe(setup.acc, rc.URL, "person.created")
		const deliveries = 16 // 2 claims of 4 for each instance
		for i := range deliveries {
			setup.touch(setup.acc, fmt.Sprintf("p%03d", i))
		}
		setup.advance(window)
		if n := len(setup.deliveries(sub)); n != deliveries {
			t.Fatalf("%d deliveries, want %d", n, deliveries)
		}
		wantRequests(t, rc, 0)

		// 10 times real time: an attempt (2 s) takes 20 s of the clock, its
		// lease 62 s (6.2 s of real time). A claim of all 16 deliveries
		// attempted 4 at a time would start its fourth round at 6 s and hold
		// it past its lease, and the other instance would claim and POST it
		// too.
		clk := fastClock{start: setup.clock.Now().Add(time.Hour), began: time.Now(), speed: 10}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for _, st := range []store.Store{setup.st, eng.Open(t, db)} {
			w, err := webhook.NewWorker(st, &webhooktest.Renderer{}, clk, s, quiet)
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() { w.Run(ctx) })
		}
		deadline := time.Now().Add(20 * time.Second)
		var ds []domain.Delivery
		for {
			ds = setup.deliveries(sub)
			pending := 0
			for _, d := range ds {
				if d.Status == domain.DeliveryPending {
					pending++
				}
			}
			if pending == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		cancel()
		wg.Wait()

		posts := map[string]int{}
		for _, req := range rc.Requests() {
			posts[req.Header.Get("Service-Delivery-Id")]++
		}
		logged := 0
		for _, d := range ds {
			d, attempts, err := setup.st.GetDelivery(context.Background(), setup.acc, sub.ID, d.ID)
			if err != nil {
				t.Fatal(err)
			}
			logged += len(attempts)
			if d.Status != domain.DeliveryFailed || d.Attempts != 1 || len(attempts) != 1 {
				t.Errorf("delivery %s: %s after %d attempts (%d in its log), want failed after 1", d.ID, d.Status, d.Attempts, len(attempts))
			}
			if posts[d.ID] != 1 {
				t.Errorf("delivery %s POSTed %d times, want once", d.ID, posts[d.ID])
			}
		}
		if n := len(rc.Requests()); logged != n {
			t.Errorf("the log counts %d attempts, the receiver got %d POSTs", logged, n)
		}
	})
}

// countingClaims counts the claims of deliveries that took any.
type countingClaims struct {
	store.Store
	mu     sync.Mutex
	claims int
}

func (c *countingClaims) ClaimDeliveriesFairly(ctx context.Context, now time.Time, lease time.Duration, dc store.DeliveryClaim) ([]domain.DeliveryJob, error) {
	jobs, err := c.Store.ClaimDeliveriesFairly(ctx, now, lease, dc)
	if len(jobs) > 0 {
		c.mu.Lock()
		c.claims++
		c.mu.Unlock()
	}
	return jobs, err
}

func (c *countingClaims) taken() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.claims
}

// TestAClosingBurstLeasesItsDeliveriesToItsWorker: once a claim has shown
// that a subscription has no backlog, the deliveries a closing burst makes
// for it are leased to the worker in the same transaction and attempted
// without a claim; until then (the first claim), they are claimed.
func TestAClosingBurstLeasesItsDeliveriesToItsWorker(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rc := webhooktest.NewReceiver(t)
		s := webhooktest.Settings(rc)
		r := start(t, eng, s)
		jobs := &countingClaims{Store: r.st}
		w, err := webhook.NewWorker(jobs, r.render, r.clock, s, quiet)
		if err != nil {
			t.Fatal(err)
		}
		sub := r.subscribe(r.acc, rc.URL, "person.created")
		for i := range 3 {
			r.touch(r.acc, fmt.Sprintf("p%d", i))
			r.clock.Advance(window)
			if err := w.RunOnce(context.Background()); err != nil {
				t.Fatal(err)
			}
			wantRequests(t, rc, i+1)
			if got := jobs.taken(); got != 1 {
				t.Fatalf("after %d bursts: %d claims took deliveries, want 1 (the first)", i+1, got)
			}
		}
		for _, d := range r.deliveries(sub) {
			if d.Status != domain.DeliverySucceeded || d.Attempts != 1 || d.LeaseUntil != nil {
				t.Fatalf("delivery %s: %+v", d.ID, d)
			}
		}
	})
}
