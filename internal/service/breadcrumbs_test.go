package service

import (
	"errors"
	"slices"
	"testing"

	"github.com/pds-dev/pds/internal/domain"
)

// TestCheckBreadcrumbRefsNormalizes: the identifiers come back in their
// normal form, the one persons are matched by.
func TestCheckBreadcrumbRefsNormalizes(t *testing.T) {
	in := domain.BreadcrumbInput{Email: text("\u212Aate@Example.org"), ExternalID: text("crm-\uff11")}
	if err := CheckBreadcrumbRefs(&in); err != nil || *in.Email != "kate@example.org" || *in.ExternalID != "crm-1" {
		t.Fatalf("%v: email %q, external_id %q", err, *in.Email, *in.ExternalID)
	}
}

func TestCheckBreadcrumbRefs(t *testing.T) {
	empty := text("")
	for _, tc := range []struct {
		name string
		in   domain.BreadcrumbInput
		// pointers the 400 names, nil when the references are accepted
		invalid []string
	}{
		{"append breadcrumb 2: person_id alone names the person", domain.BreadcrumbInput{PersonID: text("per_1")}, nil},
		{"append breadcrumb 2: one identifier alone is enough to resolve or create the person", domain.BreadcrumbInput{FID: text("f")}, nil},
		{"decisions 6: person_id beside identifiers is accepted (person_id decides)",
			domain.BreadcrumbInput{PersonID: text("per_1"), ExternalID: text("e"), Email: text("a@x.test")}, nil},
		{"decisions 6: campaign_id and project_id are optional", domain.BreadcrumbInput{Email: text("a@x.test"), CampaignID: text("cmp_1"), ProjectID: text("prj_1")}, nil},
		{"decisions 6: a breadcrumb with no person_id and no identifier is a 400 naming all four",
			domain.BreadcrumbInput{CampaignID: text("cmp_1")}, []string{"/person_id", "/external_id", "/email", "/f_id"}},
		{"an empty person_id is a 400, not a lookup", domain.BreadcrumbInput{PersonID: empty, Email: text("a@x.test")}, []string{"/person_id"}},
		{"an empty campaign_id is a 400", domain.BreadcrumbInput{PersonID: text("per_1"), CampaignID: empty}, []string{"/campaign_id"}},
		{"an empty project_id is a 400", domain.BreadcrumbInput{PersonID: text("per_1"), ProjectID: empty}, []string{"/project_id"}},
		{"decisions 4: an identifier is matched exactly, so an empty one is a 400", domain.BreadcrumbInput{ExternalID: empty}, []string{"/external_id"}},
		{"an email that is no email address is a 400", domain.BreadcrumbInput{Email: text("not an email")}, []string{"/email"}},
		{"an identifier with a zero-width space is a 400", domain.BreadcrumbInput{Email: text("a@x.test\u200b")}, []string{"/email"}},
		{"an identifier with a trailing space is a 400", domain.BreadcrumbInput{ExternalID: text("crm-1 ")}, []string{"/external_id"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckBreadcrumbRefs(&tc.in)
			if tc.invalid == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ve *domain.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("got %v, want a 400 at %v", err, tc.invalid)
			}
			var pointers []string
			for _, e := range ve.Errors {
				pointers = append(pointers, e.Pointer)
			}
			if !slices.Equal(pointers, tc.invalid) {
				t.Fatalf("400 at %v, want %v", pointers, tc.invalid)
			}
		})
	}
}
