// Package personview renders a person the two ways the API and the webhooks
// show it: the compact representation of spec section 2.2 and the extended
// view of section 2.9. GET /persons/{id}?extended=true and the data of a
// webhook delivery are the same Extended view.
package personview

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

// CompactPerson is the representation of Upsert, Get, Update, Add Tags and
// list items.
type CompactPerson struct {
	ID           string            `json:"id"`
	Email        *string           `json:"email"`
	ExternalID   *string           `json:"external_id"`
	FirstName    *string           `json:"first_name"`
	LastName     *string           `json:"last_name"`
	Phone        *string           `json:"phone"`
	CustomFields map[string]string `json:"custom_fields"`
	TagIDs       []string          `json:"tag_ids"`
	DateCreated  domain.Time       `json:"date_created"`
	DateLastSeen domain.Time       `json:"date_last_seen"`
}

// Compact renders the compact representation.
func Compact(p *domain.Person) CompactPerson {
	return CompactPerson{
		ID:           p.ID,
		Email:        p.Email,
		ExternalID:   p.ExternalID,
		FirstName:    p.FirstName,
		LastName:     p.LastName,
		Phone:        p.Phone,
		CustomFields: orEmptyMap(p.CustomFields),
		TagIDs:       orEmpty(p.TagIDs),
		DateCreated:  domain.T(p.DateCreated),
		DateLastSeen: domain.T(p.DateLastSeen),
	}
}

// ExportedPerson is a line of the export: the compact representation and
// f_id, which Upsert Person matches on and a restore must give back.
type ExportedPerson struct {
	ID           string            `json:"id"`
	Email        *string           `json:"email"`
	ExternalID   *string           `json:"external_id"`
	FID          *string           `json:"f_id"`
	FirstName    *string           `json:"first_name"`
	LastName     *string           `json:"last_name"`
	Phone        *string           `json:"phone"`
	CustomFields map[string]string `json:"custom_fields"`
	TagIDs       []string          `json:"tag_ids"`
	DateCreated  domain.Time       `json:"date_created"`
	DateLastSeen domain.Time       `json:"date_last_seen"`
	// Aliases are the identifiers of persons merged into this one
	// (domain.Person.Aliases); absent when it has none, so that the line
	// of a person never merged into is as it always was.
	Aliases []domain.PersonAlias `json:"aliases,omitempty"`
}

// Exported renders a line of the export.
func Exported(p *domain.Person) ExportedPerson {
	c := Compact(p)
	return ExportedPerson{ID: c.ID, Email: c.Email, ExternalID: c.ExternalID, FID: p.FID, FirstName: c.FirstName,
		LastName: c.LastName, Phone: c.Phone, CustomFields: c.CustomFields, TagIDs: c.TagIDs,
		DateCreated: c.DateCreated, DateLastSeen: c.DateLastSeen, Aliases: p.Aliases}
}

// ExtendedPerson is the extended view: every key always present, a value the
// person does not hold is null, [] or {}.
type ExtendedPerson struct {
	ID           string            `json:"id"`
	ExternalID   *string           `json:"external_id"`
	Email        *string           `json:"email"`
	FirstName    *string           `json:"first_name"`
	LastName     *string           `json:"last_name"`
	Name         *string           `json:"name"`
	Phone        *string           `json:"phone"`
	Language     *string           `json:"language"`
	Pseudonym    *string           `json:"pseudonym"`
	Occupation   *string           `json:"occupation"`
	Age          *string           `json:"age"`
	Ethnicity    *string           `json:"ethnicity"`
	Income       *string           `json:"income"`
	Edu          *string           `json:"edu"`
	Companies    json.RawMessage   `json:"companies"`
	Address      domain.Address    `json:"address"`
	Tags         []string          `json:"tags"`
	TagIDs       []string          `json:"tag_ids"`
	EmailOptOut  bool              `json:"email_opt_out"`
	IsArchived   bool              `json:"is_archived"`
	UpsertResult string            `json:"upsert_result"`
	PersonURL    string            `json:"0_person_url"`
	CustomFields map[string]string `json:"custom_fields"`
	// CustomData (deprecated) lists every live Person custom field of the
	// account: held values coerced by data_type, placeholders for the rest.
	CustomData   map[string]any `json:"custom_data"`
	DateCreated  domain.Time    `json:"date_created"`
	DateLastSeen domain.Time    `json:"date_last_seen"`
}

// Extended renders the extended view. fields are the live Person custom
// fields of the account; publicURL is the service's base URL without a
// trailing slash; now is the render time, which placeholders of unset date
// fields take.
func Extended(p *domain.Person, fields []domain.CustomField, publicURL string, now time.Time) ExtendedPerson {
	companies := p.Companies
	if len(companies) == 0 {
		companies = json.RawMessage(`[]`)
	}
	return ExtendedPerson{
		ID:           p.ID,
		ExternalID:   p.ExternalID,
		Email:        p.Email,
		FirstName:    p.FirstName,
		LastName:     p.LastName,
		Name:         fullName(p.FirstName, p.LastName),
		Phone:        p.Phone,
		Language:     p.Language,
		Pseudonym:    p.Pseudonym,
		Occupation:   p.Occupation,
		Age:          p.Age,
		Ethnicity:    p.Ethnicity,
		Income:       p.Income,
		Edu:          p.Edu,
		Companies:    companies,
		Address:      p.Address,
		Tags:         orEmpty(p.TagNames),
		TagIDs:       orEmpty(p.TagIDs),
		EmailOptOut:  p.EmailOptOut,
		IsArchived:   p.IsArchived,
		UpsertResult: p.UpsertResult,
		PersonURL:    strings.TrimRight(publicURL, "/") + "/persons/" + p.ID,
		CustomFields: orEmptyMap(p.CustomFields),
		CustomData:   customData(p.CustomFields, fields, now),
		DateCreated:  domain.T(p.DateCreated),
		DateLastSeen: domain.T(p.DateLastSeen),
	}
}

// fullName joins first and last name with one space, skipping a missing or
// empty part; nil when both are missing.
func fullName(first, last *string) *string {
	var parts []string
	for _, s := range []*string{first, last} {
		if s != nil && *s != "" {
			parts = append(parts, *s)
		}
	}
	if len(parts) == 0 {
		return nil
	}
	name := strings.Join(parts, " ")
	return &name
}

func customData(held map[string]string, fields []domain.CustomField, now time.Time) map[string]any {
	out := make(map[string]any, len(fields))
	for _, f := range fields {
		if v, ok := held[f.Key]; ok {
			out[f.Key] = domain.CoerceCustomValue(f.DataType, v)
		} else {
			out[f.Key] = domain.CustomPlaceholder(f.DataType, now)
		}
	}
	return out
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func orEmptyMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
