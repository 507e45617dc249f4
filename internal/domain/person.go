package domain

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// PersonIDPrefix starts every person id (domain.NewID).
const PersonIDPrefix = "per"

// Values of Person.UpsertResult: what the last write did to the person.
const (
	UpsertCreated   = "created"
	UpsertUpdated   = "updated"
	UpsertUnchanged = "unchanged"
)

// Person events: a burst of changes resolves to one of them.
const (
	EventPersonCreated = "person.created"
	EventPersonUpdated = "person.updated"
)

// Person is a stored person with its live tags and the values of its live
// Person custom fields.
type Person struct {
	ID         string
	AccountID  string
	Email      *string
	ExternalID *string
	FID        *string
	FirstName  *string
	LastName   *string
	Phone      *string
	// Profile attributes that no API operation writes; kept as text.
	Language   *string
	Pseudonym  *string
	Occupation *string
	Age        *string
	Ethnicity  *string
	Income     *string
	Edu        *string
	// Companies is a JSON array, as stored.
	Companies    json.RawMessage
	Address      Address
	EmailOptOut  bool
	IsArchived   bool
	UpsertResult string
	// CustomFields maps the public key of each live Person field the person
	// holds a value for to that value, as stored.
	CustomFields map[string]string
	// TagIDs and TagNames are parallel: the live tags of the person in the
	// order they were attached.
	TagIDs       []string
	TagNames     []string
	DateCreated  time.Time
	DateLastSeen time.Time
	// Aliases are the identifiers of persons merged into this one, oldest
	// merge first, read only by the export (its lines carry them): the
	// Person representation and the webhook data keep their members.
	Aliases []PersonAlias
}

// Address is the postal address of a person; every key is always present on
// the wire, null when unknown.
type Address struct {
	CountryName               *string  `json:"country_name"`
	AdministrativeAreaName    *string  `json:"administrative_area_name"`
	Locality                  *string  `json:"locality"`
	Premise1                  *string  `json:"premise1"`
	Premise2                  *string  `json:"premise2"`
	PostalCode                *string  `json:"postal_code"`
	Lat                       *float64 `json:"lat"`
	Lng                       *float64 `json:"lng"`
	CountryCode               *string  `json:"country_code"`
	CountryCode2              *string  `json:"country_code2"`
	ContinentCode             *string  `json:"continent_code"`
	RegionName                *string  `json:"region_name"`
	Timezone                  *string  `json:"timezone"`
	Organization              *string  `json:"organization"`
	AdministrativeAreaCode    *string  `json:"administrative_area_code"`
	SubAdministrativeAreaCode *string  `json:"sub_administrative_area_code"`
	SubAdministrativeAreaName *string  `json:"sub_administrative_area_name"`
}

// PersonUpdate is the body of Update Person: absent fields stay, null clears.
type PersonUpdate struct {
	Email     Opt[string] `json:"email"`
	FirstName Opt[string] `json:"first_name"`
	LastName  Opt[string] `json:"last_name"`
	Phone     Opt[string] `json:"phone"`
	// CustomFields merges key by key: a null value removes that key; null
	// for the whole object removes every value.
	CustomFields Opt[map[string]json.RawMessage] `json:"custom_fields"`
}

// PersonUpsert is the body of Upsert Person: the update fields plus the two
// identifiers that only an upsert may set. (Not embedding PersonUpdate keeps
// decoding errors pointing at /first_name rather than a Go type's path.)
type PersonUpsert struct {
	Email        Opt[string]                     `json:"email"`
	ExternalID   Opt[string]                     `json:"external_id"`
	FID          Opt[string]                     `json:"f_id"`
	FirstName    Opt[string]                     `json:"first_name"`
	LastName     Opt[string]                     `json:"last_name"`
	Phone        Opt[string]                     `json:"phone"`
	CustomFields Opt[map[string]json.RawMessage] `json:"custom_fields"`
}

// AsUpsert is the update as an upsert that leaves external_id and f_id alone.
func (u PersonUpdate) AsUpsert() PersonUpsert {
	return PersonUpsert{Email: u.Email, FirstName: u.FirstName, LastName: u.LastName, Phone: u.Phone, CustomFields: u.CustomFields}
}

// Identifiers are the identifiers the upsert gives, the ones it matches on.
func (u PersonUpsert) Identifiers() Identifiers {
	return Identifiers{ExternalID: u.ExternalID.Ptr(), Email: u.Email.Ptr(), FID: u.FID.Ptr()}
}

// MaxTagIDs bounds the tag ids of one Add Person Tags (and of one List
// Persons tag filter).
const MaxTagIDs = 100

// CheckTagIDs holds Add Person Tags' tag_ids to its bounds: at least one, at
// most MaxTagIDs, none empty.
func CheckTagIDs(ids []string) error {
	switch {
	case len(ids) == 0:
		return BodyError("/tag_ids", "tag_ids is required and must hold at least one tag id.")
	case len(ids) > MaxTagIDs:
		return BodyError("/tag_ids", "tag_ids may hold at most %d tag ids; got %d.", MaxTagIDs, len(ids))
	}
	for i, id := range ids {
		if id == "" {
			return BodyError("/tag_ids/"+strconv.Itoa(i), "Every item of tag_ids must be a non-empty tag id string.")
		}
	}
	return nil
}

// MaxPersonText bounds every person text attribute, identifiers included.
const MaxPersonText = 255

// Normalize checks the attributes that need no stored state and puts the
// identifiers (external_id, email, f_id and phone) in their normal form
// (NormalIdentifier), which is what every later step matches, suppresses
// and stores.
func (u *PersonUpsert) Normalize() error {
	for _, id := range []struct {
		kind string
		v    *Opt[string]
	}{{KindExternalID, &u.ExternalID}, {KindEmail, &u.Email}, {KindFID, &u.FID}, {KindPhone, &u.Phone}} {
		if err := NormalizeIdentifier(id.kind, id.v); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		ptr string
		v   Opt[string]
	}{{"/first_name", u.FirstName}, {"/last_name", u.LastName}} {
		if v := f.v.Ptr(); v != nil && utf8.RuneCountInString(*v) > MaxPersonText {
			return BodyError(f.ptr, "%s is longer than %d characters.", f.ptr[1:], MaxPersonText)
		}
	}
	return nil
}

// NormalizeIdentifier puts a body member holding an identifier of kind in
// its normal form, or refuses it as a 400 pointing at the member; absent
// and null members are left as they are.
func NormalizeIdentifier(kind string, v *Opt[string]) error {
	if p := v.Ptr(); p != nil {
		n, err := NormalIdentifier(kind, *p)
		if err != nil {
			return BodyError("/"+kind, "%s.", err.Error())
		}
		v.Value = n
	}
	return nil
}

func plausibleEmail(s string) bool {
	at := strings.LastIndexByte(s, '@')
	return at > 0 && at < len(s)-1 && !strings.ContainsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r == '<' || r == '>' })
}

// Identifiers are the stable keys a person is matched by; nil is not given.
type Identifiers struct {
	ExternalID, Email, FID *string
}

// Any tells whether at least one identifier is given.
func (ids Identifiers) Any() bool { return ids.Count() > 0 }

// Count is how many identifiers are given.
func (ids Identifiers) Count() int {
	n := 0
	for _, v := range []*string{ids.ExternalID, ids.Email, ids.FID} {
		if v != nil {
			n++
		}
	}
	return n
}

// PersonListMode is how List Persons selects, as service.SelectPersons
// decides from the request; the zero value is no decision.
type PersonListMode int

const (
	// PersonWindow: persons last seen at or after Since, filtered by
	// ExternalID when set and by holding every one of TagIDs.
	PersonWindow PersonListMode = iota + 1
	// PersonByExternalID: the person whose external_id is Key.
	PersonByExternalID
	// PersonByEmail: the person whose email is Key, compared case-insensitively.
	PersonByEmail
)

// PersonSelection is what List Persons reads; only the members of its Mode
// are set.
type PersonSelection struct {
	Mode       PersonListMode
	Since      time.Time
	ExternalID *string
	TagIDs     []string
	Key        string
	// NewestFirst orders the window by date_last_seen descending (then id
	// descending) rather than the API's ascending order: the console's
	// persons screen, whose first page is then the persons seen last.
	NewestFirst bool
}

// PersonExport is what Export Persons reads: every person of the account
// after After in id order, narrowed by the filters that are set.
type PersonExport struct {
	// After is the id the export resumes after ("" starts at the first).
	After string
	// UpdatedSince, when set, keeps persons last seen at or after it (of
	// any age: an export has no 30-day bound).
	UpdatedSince *time.Time
	// TagIDs keeps persons holding every one of these live tags.
	TagIDs []string
}
