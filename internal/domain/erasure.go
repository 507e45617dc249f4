package domain

import (
	"fmt"
	"time"
)

// EventPersonDeleted is the event of an erasure: one delivery per erasure
// to each active subscription that lists it, whose data holds only the
// erased person's id and the time of the erasure.
const EventPersonDeleted = "person.deleted"

// ScopePersonsErase grants erasing persons and reading and lifting
// suppressions. persons:write does not imply it, so that no key minted
// before it existed gains it.
const ScopePersonsErase Scope = "persons:erase"

// Suppression kinds: the identifiers an erasure with suppression remembers.
const (
	SuppressEmail      = "email"
	SuppressExternalID = "external_id"
	SuppressFID        = "f_id"
	SuppressPhone      = "phone"
)

// SuppressionKinds lists every kind of suppressed identifier.
var SuppressionKinds = []string{SuppressEmail, SuppressExternalID, SuppressFID, SuppressPhone}

// EraseRequest is what an erasure asks for besides the person: whether its
// identifiers are suppressed, and which key asked (recorded, never shown
// with an identifier).
type EraseRequest struct {
	Suppress bool
	KeyID    string
}

// Erasure is the record of one erasure: when, by which key, which person
// id, whether its identifiers were suppressed. It never holds an
// identifier.
type Erasure struct {
	ID, PersonID, KeyID string
	At                  time.Time
	Suppressed          bool
}

// Suppression is one identifier an erasure suppressed, kept only as a keyed
// hash (HMAC-SHA256 under the account's secret, hex).
type Suppression struct {
	ID, Kind, Hash string
	CreatedAt      time.Time
	KeyID          string
}

// SuppressedError is a 409: the write names an identifier an erasure
// suppressed, and nothing was stored. Kind says which identifier (never its
// value, which the caller sent anyway, nor its hash).
type SuppressedError struct {
	Kind    string
	Pointer string
}

func (e *SuppressedError) Error() string {
	return fmt.Sprintf("The %s names a person who was erased and suppressed; nothing was stored. Lift the suppression (DELETE /suppressions/{id}) to accept it again.", e.Kind)
}
