package webhook_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/metrics"
	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/internal/webhook/webhooktest"
)

// TestMetricsFollowThePipeline: the backlog gauges (open bursts, pending
// deliveries, the age of the oldest due one) and the attempt counters move
// as a burst closes, its delivery fails once and then succeeds.
func TestMetricsFollowThePipeline(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rc := webhooktest.NewReceiver(t)
		rc.FirstThen(http.StatusServiceUnavailable, http.StatusOK)
		r := start(t, eng, webhooktest.Settings(rc))
		m := metrics.New()
		m.WatchBacklog(r.st, r.clock)
		r.worker.Observe(m)
		r.subscribe(r.acc, rc.URL, "person.created")
		gauge := func(name string) float64 {
			t.Helper()
			fams, err := m.Registry.Gather()
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range fams {
				if f.GetName() == name {
					return f.GetMetric()[0].GetGauge().GetValue()
				}
			}
			t.Fatalf("no %s", name)
			return 0
		}
		attempts := func(outcome string) float64 {
			t.Helper()
			fams, err := m.Registry.Gather()
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range fams {
				if f.GetName() != "pds_webhook_attempts_total" {
					continue
				}
				for _, c := range f.GetMetric() {
					if c.GetLabel()[0].GetValue() == outcome {
						return c.GetCounter().GetValue()
					}
				}
			}
			t.Fatalf("no attempts counter for %s", outcome)
			return 0
		}

		r.touch(r.acc, "p1")
		if gauge("pds_webhook_open_bursts") != 1 || gauge("pds_webhook_deliveries_pending") != 0 {
			t.Fatalf("after a change: bursts %v, pending %v", gauge("pds_webhook_open_bursts"), gauge("pds_webhook_deliveries_pending"))
		}
		r.advance(window) // 503: retried in 5 s
		if gauge("pds_webhook_open_bursts") != 0 || gauge("pds_webhook_deliveries_pending") != 1 || gauge("pds_webhook_oldest_due_seconds") != 0 {
			t.Fatal("after the first attempt: want no burst, one pending delivery, none due")
		}
		if attempts("retry") != 1 || attempts("succeeded") != 0 {
			t.Fatalf("attempts retry %v succeeded %v", attempts("retry"), attempts("succeeded"))
		}
		r.clock.Advance(5*time.Second + 2*time.Second) // due for 2 s
		if lag := gauge("pds_webhook_oldest_due_seconds"); lag != 2 {
			t.Fatalf("lag %v, want 2 s", lag)
		}
		r.run()
		if gauge("pds_webhook_deliveries_pending") != 0 || gauge("pds_webhook_oldest_due_seconds") != 0 || attempts("succeeded") != 1 {
			t.Fatal("after the retry: want nothing pending and one success")
		}
		fams, err := m.Registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fams {
			if f.GetName() == "pds_webhook_delivery_seconds" {
				h := f.GetMetric()[0].GetHistogram()
				if h.GetSampleCount() != 1 || h.GetSampleSum() != 7 {
					t.Fatalf("time from close to 2xx: %d samples, sum %v; want 1 of 7 s", h.GetSampleCount(), h.GetSampleSum())
				}
			}
		}
	})
}
