package domain

import (
	"testing"
	"time"
)

func TestAppendTimeAsTheLayout(t *testing.T) {
	for _, tc := range []time.Time{
		time.Date(2026, 11, 21, 10, 15, 30, 123456789, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		time.Date(1999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(2026, 11, 21, 10, 15, 30, 7_000_000, time.FixedZone("plus", 5*3600+1800)),
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999_000_000, time.UTC),
		time.Date(12345, 6, 7, 8, 9, 10, 0, time.UTC),
		time.Date(-3, 6, 7, 8, 9, 10, 0, time.UTC),
		time.UnixMilli(1795259056123),
	} {
		want := tc.UTC().Format(TimeLayout)
		if got := string(AppendTime([]byte("x"), tc)); got != "x"+want {
			t.Errorf("AppendTime(%v) = %q, want %q", tc, got, "x"+want)
		}
	}
}
