package service

import (
	"testing"

	"github.com/pds-dev/pds/internal/domain"
)

func TestStampsFor(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change PersonChange
		want   Stamps
	}{
		{"decisions 4: a write that changes nothing (a tag already held, an equal PATCH) stamps nothing", NoChange, Stamps{}},
		{"decisions 10: an upsert that matched and changed nothing is unchanged, not seen, no event", UpsertNoChange,
			Stamps{UpsertResult: domain.UpsertUnchanged}},
		{"decisions 4 and 10: a breadcrumb for an existing person moves date_last_seen and fires no event", SeenOnly,
			Stamps{LastSeen: true}},
		{"decisions 4 and 10: a change of attributes, tags or custom fields is updated, seen, and an event", Changed,
			Stamps{LastSeen: true, UpsertResult: domain.UpsertUpdated, Event: true}},
		{"decisions 10 and 6.1 rule 3: a creation is created, seen, and opens a person.created burst", Created,
			Stamps{LastSeen: true, UpsertResult: domain.UpsertCreated, Event: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := StampsFor(tc.change); got != tc.want {
				t.Fatalf("stamps %+v, want %+v", got, tc.want)
			}
		})
	}
}
