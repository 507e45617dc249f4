package service

import "github.com/pds-dev/pds/internal/domain"

// PersonChange is what a write did to a person, as the store reports it.
type PersonChange int

const (
	// NoChange: nothing to record (a tag already held, a PATCH with the
	// values the person has).
	NoChange PersonChange = iota
	// UpsertNoChange: an upsert matched and changed nothing.
	UpsertNoChange
	// SeenOnly: a breadcrumb for an existing person.
	SeenOnly
	// Changed: an attribute, custom field value or tag changed.
	Changed
	// Created: the write inserted the person.
	Created
)

// Stamps is what recording a change writes on the person.
type Stamps struct {
	// LastSeen: date_last_seen moves to the time of the write.
	LastSeen bool
	// UpsertResult is the upsert_result the write leaves; "" leaves the
	// one there is.
	UpsertResult string
	// Event: the change enters the person's outbox, to be delivered as a
	// person event (BurstAfterChange).
	Event bool
}

// StampsFor decides the stamps of a change (decisions.md sections 4 and
// 10): date_last_seen moves on every change and on a breadcrumb appended
// for the person; upsert_result says created, updated or unchanged for the
// last write that creates, changes or upserts; only a creation or a change
// is a person event, a breadcrumb for an existing person is not.
func StampsFor(c PersonChange) Stamps {
	switch c {
	case UpsertNoChange:
		return Stamps{UpsertResult: domain.UpsertUnchanged}
	case SeenOnly:
		return Stamps{LastSeen: true}
	case Changed:
		return Stamps{LastSeen: true, UpsertResult: domain.UpsertUpdated, Event: true}
	case Created:
		return Stamps{LastSeen: true, UpsertResult: domain.UpsertCreated, Event: true}
	}
	return Stamps{}
}
