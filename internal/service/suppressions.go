package service

import (
	"strings"

	"github.com/pds-dev/pds/internal/domain"
)

// SuppressionLookup decides what List Suppressions reads from its
// identifier parameters, keyed by kind (domain.SuppressionKinds; a kind
// left out is not given): with none, every suppression (lookup false);
// with one, the forms in which a write naming that identifier is checked
// against the suppressions (domain.CheckedValues of its normal form, a
// phone by its digits and also as written), so that the lookup finds
// exactly the suppressions that would refuse it. Several given, one that
// does not parse or one that is not an identifier are a 400 naming them:
// a lookup that silently used one of two values would answer for an
// identifier the client did not mean.
func SuppressionLookup(given map[string]Param[string]) (values []domain.SuppressedValue, lookup bool, err error) {
	var named []string
	for _, kind := range domain.SuppressionKinds {
		p, ok := given[kind]
		if !ok {
			continue
		}
		if p.Err != nil {
			return nil, false, p.Err
		}
		if p.Value != nil {
			named = append(named, kind)
		}
	}
	switch len(named) {
	case 0:
		return nil, false, nil
	case 1:
	default:
		d := "Give one identifier to look up: one of " + strings.Join(domain.SuppressionKinds, ", ") +
			"; this request gives " + strings.Join(named, " and ") + "."
		errs := make([]domain.FieldError, len(named))
		for i, kind := range named {
			errs[i] = domain.FieldError{Parameter: kind, Detail: d}
		}
		return nil, false, &domain.ValidationError{Detail: d, Errors: errs}
	}
	kind := named[0]
	n, err := domain.NormalIdentifier(kind, *given[kind].Value)
	if err != nil {
		return nil, false, domain.ParamError(kind, "%s.", err.Error())
	}
	var email, externalID, fID, phone *string
	switch kind {
	case domain.SuppressEmail:
		email = &n
	case domain.SuppressExternalID:
		externalID = &n
	case domain.SuppressFID:
		fID = &n
	case domain.SuppressPhone:
		phone = &n
	}
	return domain.CheckedValues(email, externalID, fID, phone), true, nil
}
