package domain

import "testing"

func TestIdentifiersCount(t *testing.T) {
	s := func(v string) *string { return &v }
	for _, c := range []struct {
		ids  Identifiers
		want int
	}{
		{Identifiers{}, 0},
		{Identifiers{Email: s("a@example.com")}, 1},
		{Identifiers{ExternalID: s("crm-1"), FID: s("f-1")}, 2},
		{Identifiers{ExternalID: s("crm-1"), Email: s("a@example.com"), FID: s("f-1")}, 3},
		{Identifiers{ExternalID: s("")}, 1}, // an empty string is still given
	} {
		if got := c.ids.Count(); got != c.want {
			t.Errorf("%+v.Count() = %d, want %d", c.ids, got, c.want)
		}
		if got := c.ids.Any(); got != (c.want > 0) {
			t.Errorf("%+v.Any() = %v, want %v", c.ids, got, c.want > 0)
		}
	}
}
