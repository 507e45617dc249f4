package webhook_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/pds-dev/pds/internal/clock"
	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/internal/webhook/webhooktest"
)

// BenchmarkBurstToDelivery: per person created (the person writes are not
// timed), closing its burst into a delivery and delivering it, signed, to a
// local HTTPS receiver (connections reused), with every row written on the
// engine.
func BenchmarkBurstToDelivery(b *testing.B) {
	for _, eng := range testenv.Engines {
		b.Run(eng.Name, func(b *testing.B) {
			rc := webhooktest.NewReceiver(b)
			st := eng.NewStore(b)
			clk := clock.NewFake(t0)
			r := newRig(b, st, clk, webhooktest.Settings(rc))
			r.acc = r.account()
			r.subscribe(r.acc, rc.URL, "person.created")
			ctx := context.Background()
			for i := range b.N {
				r.touch(r.acc, fmt.Sprintf("p%d", i))
			}
			clk.Advance(window)
			b.ResetTimer()
			if err := r.worker.RunOnce(ctx); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if n := len(rc.Requests()); n != b.N {
				b.Fatalf("%d deliveries for %d bursts", n, b.N)
			}
		})
	}
}
