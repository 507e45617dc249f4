package service

import (
	"maps"
	"slices"

	"github.com/pds-dev/pds/internal/domain"
)

// ChangedMembers is the changes member of a person.updated body (issue
// 67): the tracked members whose value at the burst's end differs from
// their value at its start, in the order email, external_id, first_name,
// last_name, phone, tag_ids, then custom_fields.<key> by key. A member
// changed and changed back differs in neither, so it is not listed; tag_ids
// compares the set of live tags, not their order; a custom value set,
// changed or removed lists its key. start nil is a start pds does not know
// (no delivery told the person since a subscription of the account asked
// for changes): the person is taken to have started empty, so every
// member it holds is listed. Never nil.
func ChangedMembers(start *domain.TrackedMembers, end domain.TrackedMembers) []string {
	var from domain.TrackedMembers
	if start != nil {
		from = start.Normal()
	}
	to := end.Normal()
	out := []string{}
	for _, m := range []struct {
		name string
		a, b *string
	}{
		{"email", from.Email, to.Email},
		{"external_id", from.ExternalID, to.ExternalID},
		{"first_name", from.FirstName, to.FirstName},
		{"last_name", from.LastName, to.LastName},
		{"phone", from.Phone, to.Phone},
	} {
		if !equalOptional(m.a, m.b) {
			out = append(out, m.name)
		}
	}
	if !slices.Equal(from.TagIDs, to.TagIDs) {
		out = append(out, "tag_ids")
	}
	keys := slices.Sorted(maps.Keys(from.CustomFields))
	for k := range to.CustomFields {
		if _, ok := from.CustomFields[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		a, inFrom := from.CustomFields[k]
		b, inTo := to.CustomFields[k]
		if inFrom != inTo || a != b {
			out = append(out, "custom_fields."+k)
		}
	}
	return out
}

func equalOptional(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}
