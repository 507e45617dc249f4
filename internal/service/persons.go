package service

import (
	"fmt"

	"github.com/pds-dev/pds/internal/domain"
)

// Holder is a stored person that holds at least one of the identifiers a
// write names. The store loads every holder (at most one per identifier,
// the identifiers being unique) and the functions below decide. An
// identifier is never empty (domain.CheckIdentifier), so "" is one the
// person does not hold.
type Holder struct {
	ID         string
	ExternalID string
	// EmailNorm is the stored email in the form emails compare in.
	EmailNorm string
	FID       string
}

// matchOrder is the order identifiers decide a match in (spec, Upsert
// Person rule 1): a stable external_id outranks an email, which can move
// between persons, and f_id comes last.
var matchOrder = []string{"external_id", "email", "f_id"}

// holds tells whether h holds the identifier called name with ids' value.
func (h Holder) holds(name string, ids domain.Identifiers) bool {
	switch name {
	case "external_id":
		return ids.ExternalID != nil && h.ExternalID != "" && h.ExternalID == *ids.ExternalID
	case "email":
		return ids.Email != nil && h.EmailNorm != "" && h.EmailNorm == domain.NormEmail(*ids.Email)
	default:
		return ids.FID != nil && h.FID != "" && h.FID == *ids.FID
	}
}

// MatchPerson returns the person the identifiers match: the holder of the
// external_id, else of the email (case-insensitively), else of the f_id.
func MatchPerson(ids domain.Identifiers, holders []Holder) (id string, found bool) {
	for _, name := range matchOrder {
		for _, h := range holders {
			if h.holds(name, ids) {
				return h.ID, true
			}
		}
	}
	return "", false
}

// PersonTarget is the person a write goes to: an existing one (ID), or a
// new one the store creates (Create).
type PersonTarget struct {
	ID     string
	Create bool
}

// UpsertTarget decides Upsert Person: the matched person, or a new one when
// nothing matches. Every supplied identifier is then applied to that person,
// so one that another person holds is a conflict (decisions.md section 10).
func UpsertTarget(ids domain.Identifiers, holders []Holder) (PersonTarget, error) {
	id, found := MatchPerson(ids, holders)
	if !found {
		return PersonTarget{Create: true}, nil
	}
	return PersonTarget{ID: id}, CheckIdentifiersFree(id, ids, holders)
}

// CheckIdentifiersFree is the uniqueness of identifiers within an account:
// applying ids to personID is a 409 naming another person that holds one
// of them (the first in match order).
func CheckIdentifiersFree(personID string, ids domain.Identifiers, holders []Holder) error {
	for _, name := range matchOrder {
		for _, h := range holders {
			if h.ID != personID && h.holds(name, ids) {
				return &domain.ConflictError{
					Detail:     fmt.Sprintf("Another person (%s) already holds this %s; identifiers are unique within an account.", h.ID, name),
					ExistingID: h.ID,
				}
			}
		}
	}
	return nil
}

// MatchOrCreate decides the person of a breadcrumb named by identifiers
// (decisions.md sections 6 and 10): the matched person, else a new one
// holding them. It only matches: it never applies an identifier to the
// matched person, so a second holder is no conflict.
func MatchOrCreate(ids domain.Identifiers, holders []Holder) PersonTarget {
	if id, found := MatchPerson(ids, holders); found {
		return PersonTarget{ID: id}
	}
	return PersonTarget{Create: true}
}
