package sqlstore

import "testing"

func TestReversedOrder(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"h.last_seen_at, h.person_id", "h.last_seen_at DESC, h.person_id DESC"},
		{"activity_at DESC, id DESC", "activity_at, id"},
		{"created_at ASC,id", "created_at DESC, id DESC"},
		{"last_seen_at", "last_seen_at DESC"},
	} {
		if got := reversedOrder(tc.in); got != tc.want {
			t.Errorf("reversedOrder(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
