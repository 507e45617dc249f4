package ratelimit_test

import (
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/ratelimit"
)

// TestFailuresCountAttemptsUntilTheySucceed: an attempt holds its place in
// the address's budget from Begin on, so that attempts under way at once
// cannot outnumber the budget; a success gives its place back, a failure
// keeps it, and the next window starts afresh.
func TestFailuresCountAttemptsUntilTheySucceed(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		run  func(f *ratelimit.Failures) (allowed int)
		want int
	}{
		{"attempts under way at once hold the budget", func(f *ratelimit.Failures) int {
			n := 0
			for range 10 {
				if _, d := f.Begin("api", "a", now); d.Allowed {
					n++
				}
			}
			return n
		}, 3},
		{"successes give their places back", func(f *ratelimit.Failures) int {
			n := 0
			for range 10 {
				a, d := f.Begin("api", "a", now)
				if d.Allowed {
					n++
				}
				a.Succeeded()
			}
			return n
		}, 10},
		{"failures keep theirs", func(f *ratelimit.Failures) int {
			n := 0
			for range 10 {
				a, d := f.Begin("api", "a", now)
				if d.Allowed {
					n++
				}
				a.Failed()
				a.Succeeded() // ended already: gives nothing back
			}
			return n
		}, 3},
		{"another address has a budget of its own", func(f *ratelimit.Failures) int {
			for range 3 {
				f.Begin("api", "a", now)
			}
			n := 0
			for range 3 {
				if _, d := f.Begin("console", "b", now); d.Allowed {
					n++
				}
			}
			return n
		}, 3},
		{"the next window starts afresh", func(f *ratelimit.Failures) int {
			for range 3 {
				a, _ := f.Begin("api", "a", now)
				a.Failed()
			}
			n := 0
			for range 10 {
				if _, d := f.Begin("api", "a", now.Add(time.Minute)); d.Allowed {
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
