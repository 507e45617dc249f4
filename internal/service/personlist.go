package service

import (
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

// MaxUpdatedSinceAge is how far back updated_since may reach (spec section 8).
const MaxUpdatedSinceAge = 30 * 24 * time.Hour

// Param is a query parameter as the request carried it: its parsed Value
// (nil when absent), or Err saying why it does not parse. Whether Err
// matters is for the rules to say: an ignored parameter is never a 400.
type Param[T any] struct {
	Value *T
	Err   error
}

// PersonListParams are the selectors of a List Persons request.
type PersonListParams struct {
	UpdatedSince Param[time.Time]
	ExternalID   Param[string]
	Email        Param[string]
	TagIDs       Param[[]string]
}

// SelectPersons decides how List Persons selects (spec, List Persons rules
// 1 to 3; decisions.md section 4 settles rule 4):
//
//   - updated_since given: window mode, at most 30 days back, filtered by
//     external_id and tag_ids; email is ignored;
//   - otherwise lookup mode, by external_id, else by email; tag_ids is
//     ignored;
//   - none of the three: a 400 naming them all.
//
// An identifier it reads (external_id, or email when it is used) is put
// in its normal form, the one persons hold them in; one that cannot be an
// identifier is a 400 naming it, since no person holds it.
func SelectPersons(p PersonListParams, now time.Time) (domain.PersonSelection, error) {
	p.ExternalID = normalParam(domain.KindExternalID, p.ExternalID)
	for _, err := range []error{p.UpdatedSince.Err, p.ExternalID.Err} {
		if err != nil {
			return domain.PersonSelection{}, err
		}
	}
	switch {
	case p.UpdatedSince.Value != nil:
		earliest := now.Add(-MaxUpdatedSinceAge)
		if p.UpdatedSince.Value.Before(earliest) {
			return domain.PersonSelection{}, domain.ParamError("updated_since",
				"updated_since may be at most 30 days before now; the earliest accepted now is %s.", earliest.Format(domain.TimeLayout))
		}
		if p.TagIDs.Err != nil {
			return domain.PersonSelection{}, p.TagIDs.Err
		}
		sel := domain.PersonSelection{Mode: domain.PersonWindow, Since: *p.UpdatedSince.Value, ExternalID: p.ExternalID.Value}
		if p.TagIDs.Value != nil {
			sel.TagIDs = *p.TagIDs.Value
		}
		return sel, nil
	case p.ExternalID.Value != nil:
		return domain.PersonSelection{Mode: domain.PersonByExternalID, Key: *p.ExternalID.Value}, nil
	}
	p.Email = normalParam(domain.KindEmail, p.Email)
	switch {
	case p.Email.Err != nil:
		return domain.PersonSelection{}, p.Email.Err
	case p.Email.Value != nil:
		return domain.PersonSelection{Mode: domain.PersonByEmail, Key: *p.Email.Value}, nil
	}
	d := "At least one of updated_since (window mode), external_id or email (lookup mode) is required."
	return domain.PersonSelection{}, &domain.ValidationError{Detail: d, Errors: []domain.FieldError{
		{Parameter: "updated_since", Detail: d}, {Parameter: "external_id", Detail: d}, {Parameter: "email", Detail: d},
	}}
}

// normalParam is an identifier's query parameter in its normal form, or
// the 400 saying why it cannot be one.
func normalParam(kind string, p Param[string]) Param[string] {
	if p.Err != nil || p.Value == nil {
		return p
	}
	n, err := domain.NormalIdentifier(kind, *p.Value)
	if err != nil {
		return Param[string]{Err: domain.ParamError(kind, "%s.", err.Error())}
	}
	return Param[string]{Value: &n}
}
