package webhook_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/clock"
	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/internal/webhook"
	"github.com/pds-dev/pds/internal/webhook/webhooktest"
	"github.com/pds-dev/pds/pkg/webhookverify"
)

// startsBySecond counts, per subscription, the attempts a receiver got by
// the second they were started and signed in (Service-Timestamp).
type startsBySecond struct {
	mu   sync.Mutex
	n    map[string]map[int64]int
	last map[string]time.Time // when the subscription's latest attempt arrived
	all  map[string]int
}

func (c *startsBySecond) count(r *http.Request) {
	sec, _ := strconv.ParseInt(r.Header.Get(webhookverify.HeaderTimestamp), 10, 64)
	sub := r.Header.Get(webhookverify.HeaderWebhookID)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[sub] == nil {
		c.n[sub] = map[int64]int{}
	}
	c.n[sub][sec]++
	c.all[sub]++
	c.last[sub] = time.Now()
}

// TestMaxPerSecondHoldsOverTwoInstances: 2,000 changes make 2,000
// deliveries for each of two subscriptions of one account; the one with
// max_per_second 50 gets at most 50 attempts started in every wall-clock
// second although two instances on one database deliver it, while the
// other, without a bound, is delivered at full speed meanwhile.
func TestMaxPerSecondHoldsOverTwoInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("takes 40 s of wall-clock time at 50 a second")
	}
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		if eng.Name == "sqlite" {
			// A fleet shares a PostgreSQL database; an SQLite file serves
			// one instance, and under -race its two workers here could not
			// deliver the 4,000 attempts within three minutes in CI.
			t.Skip("a fleet of instances runs on PostgreSQL")
		}
		const (
			persons = 2000
			limit   = 50
		)
		starts := &startsBySecond{n: map[string]map[int64]int{}, last: map[string]time.Time{}, all: map[string]int{}}
		rc := webhooktest.NewReceiver(t)
		rc.Respond(func(_ int, r *http.Request) int {
			starts.count(r)
			return http.StatusNoContent
		})
		db := eng.NewDatabase(t)
		st := eng.Open(t, db)
		setup := newRig(t, st, clock.NewFake(t0), webhooktest.Settings(rc))
		acc := setup.account()
		bounded := setup.subscribe(acc, rc.URL, "person.created")
		free := setup.subscribe(acc, rc.URL, "person.created")
		bound := limit
		if _, err := st.UpdateWebhook(context.Background(), acc, bounded.ID, domain.WebhookUpdate{MaxPerSecond: &bound}, t0); err != nil {
			t.Fatal(err)
		}

		// The bursts open and close on the wall clock: the budget is a
		// wall-clock second's.
		real := clock.System{}
		const burstWindow = 200 * time.Millisecond
		var items []domain.PersonUpsert
		for i := range persons {
			items = append(items, domain.PersonUpsert{ExternalID: domain.Opt[string]{Set: true, Value: fmt.Sprintf("p%04d", i)}})
			if len(items) == 100 {
				if _, err := st.UpsertPersons(context.Background(), acc, items, store.Write{Now: real.Now(), Window: burstWindow}); err != nil {
					t.Fatal(err)
				}
				items = nil
			}
		}
		time.Sleep(burstWindow)

		s := webhooktest.Settings(rc)
		s.PollInterval = 20 * time.Millisecond
		observed := make([]*recordedCount, 2)
		began := time.Now()
		for i := range observed {
			w, err := webhook.NewWorker(eng.Open(t, db), &webhooktest.Renderer{}, real, s, quiet)
			if err != nil {
				t.Fatal(err)
			}
			observed[i] = &recordedCount{}
			w.Observe(observed[i])
			running(t, w)
		}
		rc.WaitFor(t, 2*persons, 3*time.Minute)

		starts.mu.Lock()
		defer starts.mu.Unlock()
		if starts.all[bounded.ID] != persons || starts.all[free.ID] != persons {
			t.Fatalf("attempts: bounded %d, free %d; want %d each", starts.all[bounded.ID], starts.all[free.ID], persons)
		}
		busiest := 0
		for sec, n := range starts.n[bounded.ID] {
			busiest = max(busiest, n)
			if n > limit {
				t.Errorf("second %d started %d attempts of the bounded subscription, over its %d", sec, n, limit)
			}
		}
		freeTook, boundedTook := starts.last[free.ID].Sub(began), starts.last[bounded.ID].Sub(began)
		// The attempts fill persons/limit wall-clock seconds, but the run
		// begins part way into the first and its last attempts start at
		// the beginning of the last: the span is at least two seconds
		// shorter than that count.
		if boundedTook < (persons/limit-2)*time.Second {
			t.Errorf("the bounded subscription took %v for %d attempts at %d a second", boundedTook, persons, limit)
		}
		// Full speed: the other subscription is not held to the bound, nor
		// behind the bounded one's queue.
		if freeTook > boundedTook/3 {
			t.Errorf("the unbounded subscription took %v, the bounded one %v: slowed down", freeTook, boundedTook)
		}
		for i, o := range observed {
			o.mu.Lock()
			if o.n == 0 {
				t.Errorf("instance %d made no attempt", i)
			}
			o.mu.Unlock()
		}
		t.Logf("bounded: %v, busiest second %d; unbounded: %v", boundedTook, busiest, freeTook)
	})
}
