package domain

import (
	"encoding/json"
	"slices"
)

// WithChanges adds the top-level changes member to a delivery body (a
// compact JSON object, as every body is made), for a subscription with
// include_changes; nil is written as []. The other members stay as they
// were, byte for byte.
func WithChanges(body json.RawMessage, changes []string) json.RawMessage {
	if changes == nil {
		changes = []string{}
	}
	list, _ := json.Marshal(changes) // a []string always marshals
	end := len(body) - 1
	for end > 0 && body[end] != '}' {
		end--
	}
	out := make(json.RawMessage, 0, len(body)+len(list)+12)
	out = append(out, body[:end]...)
	out = append(out, `,"changes":`...)
	out = append(append(out, list...), body[end:]...)
	return out
}

// TrackedMembers are the members of a person that a body's changes
// compares (issue 67): the identifiers and names the person holds, its
// live tags and its custom values, as the extended view shows them.
type TrackedMembers struct {
	Email        *string           `json:"email"`
	ExternalID   *string           `json:"external_id"`
	FirstName    *string           `json:"first_name"`
	LastName     *string           `json:"last_name"`
	Phone        *string           `json:"phone"`
	TagIDs       []string          `json:"tag_ids"`
	CustomFields map[string]string `json:"custom_fields"`
}

// Normal gives the members in the form they are compared and kept in:
// tag ids sorted, no empty collections.
func (m TrackedMembers) Normal() TrackedMembers {
	m.TagIDs = slices.Sorted(slices.Values(m.TagIDs))
	if len(m.TagIDs) == 0 {
		m.TagIDs = nil
	}
	if len(m.CustomFields) == 0 {
		m.CustomFields = nil
	}
	return m
}
