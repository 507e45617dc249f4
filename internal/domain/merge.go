package domain

import (
	"encoding/json"
	"fmt"
	"time"
)

// EventPersonMerged is the event of a merge: one delivery per merge to
// each subscription that lists it, written in the merge's transaction and
// not coalesced (as EventPersonDeleted), whose data is PersonMergedData.
const EventPersonMerged = "person.merged"

// MergedProblemType is the problem type of a MergedError.
const MergedProblemType = "urn:pds:problem:merged"

// MergedError is a 404 for an id that was merged into another person: the
// person is gone, but a client syncing by id learns where its data went
// instead of a bare 404. It matches ErrNotFound with errors.Is, so every
// caller that treats a missing person as missing keeps doing so.
type MergedError struct {
	PersonID, MergedInto string
}

func (e *MergedError) Error() string {
	return fmt.Sprintf("The person %q was merged into %q; use that id from now on.", e.PersonID, e.MergedInto)
}

func (e *MergedError) Is(target error) bool { return target == ErrNotFound }

// MergeRequest is the body of Merge Persons: the id of the person merged
// into the one the path names.
type MergeRequest struct {
	From string `json:"from"`
}

// PersonAlias is an identifier a merged person held that its survivor did
// not take as its own (it held one of that kind already): it keeps finding
// the survivor, until the survivor is erased.
type PersonAlias struct {
	// Kind is the identifier's name: "external_id", "email" or "f_id".
	Kind string `json:"kind"`
	// Value is in the normal form the store holds identifiers in (an
	// email lower-cased, NormEmail).
	Value string `json:"value"`
	// From is the id of the merged person that held it.
	From       string `json:"from"`
	DateMerged Time   `json:"date_merged"`
}

// AliasKinds are the kinds of identifier an alias may be, in match order.
var AliasKinds = []string{"external_id", "email", "f_id"}

// PersonMergedData is the data of a person.merged delivery: the merged id,
// the survivor's, and when; never an attribute of either.
type PersonMergedData struct {
	ID         string `json:"id"`
	MergedInto string `json:"merged_into"`
	DateMerged Time   `json:"date_merged"`
}

// MergedBody is the body of a person.merged delivery.
func MergedBody(deliveryID string, created time.Time, personID, survivorID string, at time.Time) (json.RawMessage, error) {
	data, err := json.Marshal(PersonMergedData{ID: personID, MergedInto: survivorID, DateMerged: T(at)})
	if err != nil {
		return nil, err
	}
	return json.Marshal(Envelope{ID: deliveryID, Event: EventPersonMerged, Created: T(created), Data: data})
}
