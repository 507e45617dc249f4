package domain

import (
	"regexp"
	"testing"
	"time"
)

func TestIDsSortByCreationTime(t *testing.T) {
	shape := regexp.MustCompile(`^per_[0-9a-f]{24}$`)
	t0 := time.Date(2026, 11, 23, 14, 0, 0, 0, time.UTC)
	prev := ""
	for i, at := range []time.Time{t0, t0.Add(time.Millisecond), t0.Add(time.Second), t0.Add(24 * time.Hour), t0.AddDate(70, 0, 0)} {
		id := newIDAt("per", at)
		if !shape.MatchString(id) {
			t.Fatalf("%q does not have the shape of an id", id)
		}
		if id <= prev {
			t.Errorf("id %d %q sorts before the earlier %q", i, id, prev)
		}
		prev = id
	}
	a, b := newIDAt("per", t0), newIDAt("per", t0)
	if a == b || a[:16] != b[:16] {
		t.Errorf("two ids of one millisecond: %q and %q; want one time prefix and different random parts", a, b)
	}
}

func TestDeliveryIDsSortByCreationTime(t *testing.T) {
	shape := regexp.MustCompile(`^[0-9a-f]{32}$`)
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	prev := ""
	for i, at := range []time.Time{t0, t0.Add(time.Millisecond), t0.Add(time.Second), t0.Add(24 * time.Hour), t0.AddDate(70, 0, 0)} {
		id := newDeliveryIDAt(at)
		if !shape.MatchString(id) {
			t.Fatalf("%q is not 32 hex digits (spec section 6.4)", id)
		}
		if id <= prev {
			t.Errorf("id %d %q sorts before the earlier %q", i, id, prev)
		}
		prev = id
	}
	a, b := newDeliveryIDAt(t0), newDeliveryIDAt(t0)
	if a == b || a[:12] != b[:12] {
		t.Errorf("two ids of one millisecond: %q and %q; want one time prefix and different random parts", a, b)
	}
}
