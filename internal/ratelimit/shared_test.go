package ratelimit_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/ratelimit"
	"github.com/pds-dev/pds/internal/testenv"
)

var start = time.Date(2026, 11, 21, 10, 0, 10, 0, time.UTC)

// TestSharedLeasesNeverPassTheLimit: two limiters, each on its own store
// of one database (two instances), grant a key's requests from many
// goroutines at once. Together they grant exactly the limit: never more,
// and, since each spends what it leased before it is refused, no less.
func TestSharedLeasesNeverPassTheLimit(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		db := eng.NewDatabase(t)
		instances := []*ratelimit.Shared{ratelimit.NewShared(eng.Open(t, db)), ratelimit.NewShared(eng.Open(t, db))}
		for _, limit := range []int{1, 7, 100, 1000} {
			key := "key_" + time.Duration(limit).String()
			var granted, refused atomic.Int64
			var wg sync.WaitGroup
			for i := range 16 {
				lim := instances[i%2]
				wg.Go(func() {
					for {
						d, err := lim.Allow(context.Background(), key, limit, start)
						if err != nil {
							t.Error(err)
							return
						}
						if !d.Allowed {
							refused.Add(1)
							return
						}
						granted.Add(1)
						if d.Remaining < 0 || d.Remaining >= limit {
							t.Errorf("limit %d: remaining %d after a granted request", limit, d.Remaining)
						}
					}
				})
			}
			wg.Wait()
			if got := granted.Load(); got != int64(limit) {
				t.Errorf("limit %d: two instances granted %d requests", limit, got)
			}
			for _, lim := range instances {
				d, err := lim.Allow(context.Background(), key, limit, start)
				if err != nil || d.Allowed || d.Remaining != 0 {
					t.Errorf("limit %d: after the budget is spent: %+v, %v", limit, d, err)
				}
			}
			// The next window is a fresh budget.
			if d, err := instances[0].Allow(context.Background(), key, limit, start.Add(time.Minute)); err != nil || !d.Allowed {
				t.Errorf("limit %d: next window: %+v, %v", limit, d, err)
			}
		}
	})
}

// TestSharedRemaining: one instance's headers count down exactly; a second
// instance's leases show in the first's remaining from its next lease on.
func TestSharedRemaining(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		db := eng.NewDatabase(t)
		a, b := ratelimit.NewShared(eng.Open(t, db)), ratelimit.NewShared(eng.Open(t, db))
		ctx := context.Background()
		const limit = 64 // slices of 1, 2, then 4
		for i := 1; i <= 5; i++ {
			d, err := a.Allow(ctx, "key_x", limit, start)
			if err != nil || !d.Allowed || d.Remaining != limit-i {
				t.Fatalf("request %d: %+v, %v; want remaining %d", i, d, err, limit-i)
			}
		}
		// a holds 2 of its 7 leased; b leases 1 and spends it.
		if d, err := b.Allow(ctx, "key_x", limit, start); err != nil || d.Remaining != limit-8 {
			t.Fatalf("b: %+v, %v; want remaining %d (a's unspent lease counts as taken)", d, err, limit-8)
		}
		if d, err := a.Peek(ctx, "key_x", limit, start); err != nil || d.Remaining != limit-6 || !d.Allowed {
			t.Fatalf("a peeks: %+v, %v; want remaining %d", d, err, limit-6)
		}
	})
}
