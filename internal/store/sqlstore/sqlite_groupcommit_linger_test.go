package sqlstore

import (
	"testing"
	"time"
)

func TestLingers(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		n, last  int
		deadline time.Time
		want     bool
	}{
		{"a lone writer's next write is never held", 1, 1, now.Add(time.Millisecond), false},
		{"the first batch has nothing to wait for", 1, 0, now.Add(time.Millisecond), false},
		{"fewer than the last batch: the rest are on their way back", 14, 32, now.Add(time.Millisecond), true},
		{"as many as the last batch", 32, 32, now.Add(time.Millisecond), false},
		{"more than the last batch", 40, 32, now.Add(time.Millisecond), false},
		{"fewer, but the wait is over", 14, 32, now, false},
		{"fewer, past the deadline", 14, 32, now.Add(-time.Microsecond), false},
	} {
		if got := lingers(tc.n, tc.last, now, tc.deadline); got != tc.want {
			t.Errorf("%s: lingers(%d, %d) = %v, want %v", tc.name, tc.n, tc.last, got, tc.want)
		}
	}
}
