package service

import "github.com/pds-dev/pds/internal/domain"

// CheckBreadcrumbRefs checks the references of a breadcrumb before anything
// is looked up (decisions.md section 6): campaign_id, project_id and
// person_id are null or non-empty, the identifiers are in their normal
// form (domain.NormalIdentifier, which it puts them in), and the
// breadcrumb names its person, by person_id or by at least one identifier.
// Whom they then resolve to is MatchOrCreate's decision, on what the store
// finds: person_id when given, else the person the identifiers match.
func CheckBreadcrumbRefs(in *domain.BreadcrumbInput) error {
	for _, ref := range []struct {
		pointer string
		v       *string
	}{{"/campaign_id", in.CampaignID}, {"/project_id", in.ProjectID}, {"/person_id", in.PersonID}} {
		if ref.v != nil && *ref.v == "" {
			return domain.BodyError(ref.pointer, "%s must not be empty; send null or leave it out.", ref.pointer[1:])
		}
	}
	if err := in.NormalizeIdentifiers(); err != nil {
		return err
	}
	if in.PersonID == nil && !in.Identifiers().Any() {
		// Each member the person may come from is pointed at, so that a
		// form marks all four; the sentence is said once.
		errs := make([]domain.FieldError, 0, 4)
		for _, m := range []string{"person_id", "external_id", "email", "f_id"} {
			errs = append(errs, domain.FieldError{Pointer: "/" + m, Detail: m + " is not given (nor any other of the four)."})
		}
		return &domain.ValidationError{Detail: "A breadcrumb needs its person: person_id, or at least one of external_id, email and f_id.", Errors: errs}
	}
	return nil
}
