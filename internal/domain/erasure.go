package domain

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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
	// SuppressionID is the suppression that refused it, so that the
	// caller can lift exactly that one (DELETE /suppressions/{id}).
	SuppressionID string
}

// SuppressedProblemType is the problem type of a SuppressedError.
const SuppressedProblemType = "urn:pds:problem:suppressed"

func (e *SuppressedError) Error() string {
	id := e.SuppressionID
	if id == "" {
		id = "{id}"
	}
	return fmt.Sprintf("The %s names a person who was erased and suppressed; nothing was stored. Lift the suppression (DELETE /suppressions/%s) to accept it again.", e.Kind, id)
}

// PersonDeletedData is the data of a person.deleted delivery, and what a
// stored delivery body of an erased person keeps in place of the person:
// its id and when it was erased, never an attribute.
type PersonDeletedData struct {
	ID          string `json:"id"`
	DateDeleted Time   `json:"date_deleted"`
}

// ErasedHeaders is what a delivery attempt's recorded request headers
// become once the person the delivery carried is erased.
var ErasedHeaders = map[string]string{"Pds-Erased": "The person this delivery carried was erased; its body and request headers are no longer kept."}

// ErasedDeliveryError is the last_error of a delivery cancelled by the
// erasure of its person before it succeeded.
const ErasedDeliveryError = "cancelled: the person was erased"

// Envelope is the delivery body of spec section 2.9, whatever the event.
type Envelope struct {
	ID      string          `json:"id"`
	Event   string          `json:"event"`
	Created Time            `json:"created"`
	Data    json.RawMessage `json:"data"`
}

// DeletedBody is a delivery body whose data is the erased person's id and
// the time of its erasure: a person.deleted delivery's, and the marker an
// erasure leaves in place of an earlier delivery's body.
func DeletedBody(deliveryID, event string, created time.Time, personID string, at time.Time) (json.RawMessage, error) {
	data, err := json.Marshal(PersonDeletedData{ID: personID, DateDeleted: T(at)})
	if err != nil {
		return nil, err
	}
	return json.Marshal(Envelope{ID: deliveryID, Event: event, Created: T(created), Data: data})
}

// SuppressedValue is one identifier as suppression knows it: its kind, its
// value in the form writes are checked in, and where a write's body
// carries it.
type SuppressedValue struct {
	Kind, Value, Pointer string
}

// SuppressedValues lists the identifiers an erased person held that its
// erasure suppresses, in SuppressionKinds order, each in the form writes
// are checked in: an email, external_id and f_id in their normal form
// (NormalIdentifier, the form the store holds them in), a phone by its
// digits (PhoneDigits). Absent and empty ones are left out.
func SuppressedValues(email, externalID, fID, phone *string) []SuppressedValue {
	var out []SuppressedValue
	add := func(kind string, v *string, form func(string) string) {
		if v == nil || *v == "" {
			return
		}
		if f := form(*v); f != "" {
			out = append(out, SuppressedValue{Kind: kind, Value: f, Pointer: "/" + kind})
		}
	}
	same := func(s string) string { return s }
	add(SuppressEmail, email, NormEmail)
	add(SuppressExternalID, externalID, same)
	add(SuppressFID, fID, same)
	add(SuppressPhone, phone, PhoneDigits)
	return out
}

// CheckedValues lists what a write's identifiers are checked against the
// suppressions as: SuppressedValues, and a phone also as written, the form
// in which erasures before the normal form kept it (suppression hashes
// cannot be rewritten), so that those suppressions still refuse the phone
// written the same way.
func CheckedValues(email, externalID, fID, phone *string) []SuppressedValue {
	out := SuppressedValues(email, externalID, fID, phone)
	if phone != nil && *phone != "" && PhoneDigits(*phone) != *phone {
		out = append(out, SuppressedValue{Kind: SuppressPhone, Value: *phone, Pointer: "/" + SuppressPhone})
	}
	return out
}

// SuppressionHash is how a suppressed identifier is kept: HMAC-SHA256,
// keyed with the account's secret, of its kind and value, in hex. The kind
// is part of the message, so that an external_id equal to another person's
// f_id is not suppressed with it.
func SuppressionHash(secret []byte, v SuppressedValue) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(v.Kind))
	m.Write([]byte{0})
	m.Write([]byte(v.Value))
	return hex.EncodeToString(m.Sum(nil))
}
