package ratelimit_test

import (
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/ratelimit"
)

// TestFailuresAreCountedAndCheckedAtOnce: attempts that all passed the
// check before any failed are answered as failures only as far as the
// budget goes, the rest as refusals; a check refuses once the budget is
// spent; another address, and the next window, start afresh.
func TestFailuresAreCountedAndCheckedAtOnce(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		run  func(f *ratelimit.Failures) (allowed int)
		want int
	}{
		{"ten checked together, then failed: three within the budget", func(f *ratelimit.Failures) int {
			for range 10 {
				if !f.Check("api", "a", now).Allowed {
					return -1
				}
			}
			n := 0
			for range 10 {
				if f.Failed("api", "a", now).Allowed {
					n++
				}
			}
			return n
		}, 3},
		{"checks pass until the budget is spent", func(f *ratelimit.Failures) int {
			n := 0
			for range 10 {
				if f.Check("api", "a", now).Allowed {
					n++
					f.Failed("api", "a", now)
				}
			}
			return n
		}, 3},
		{"checks that do not fail spend nothing", func(f *ratelimit.Failures) int {
			n := 0
			for range 10 {
				if f.Check("console", "a", now).Allowed {
					n++
				}
			}
			return n
		}, 10},
		{"another address has a budget of its own", func(f *ratelimit.Failures) int {
			for range 5 {
				f.Failed("api", "a", now)
			}
			n := 0
			for range 5 {
				if f.Failed("console", "b", now).Allowed {
					n++
				}
			}
			return n
		}, 3},
		{"the next window starts afresh", func(f *ratelimit.Failures) int {
			for range 5 {
				f.Failed("api", "a", now)
			}
			n := 0
			for range 5 {
				if f.Failed("api", "a", now.Add(time.Minute)).Allowed {
					n++
				}
			}
			return n
		}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.run(ratelimit.NewFailures(3)); got != tc.want {
				t.Fatalf("%d allowed, want %d", got, tc.want)
			}
		})
	}
}
