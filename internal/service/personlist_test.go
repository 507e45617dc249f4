package service

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

func TestSelectPersons(t *testing.T) {
	now := t0
	recent, tooOld := now.Add(-MaxUpdatedSinceAge), now.Add(-MaxUpdatedSinceAge-time.Millisecond)
	given := func(s string) Param[string] { return Param[string]{Value: &s} }
	since := func(at time.Time) Param[time.Time] { return Param[time.Time]{Value: &at} }
	tags := func(ids ...string) Param[[]string] { return Param[[]string]{Value: &ids} }
	bad := func(name string) error { return domain.ParamError(name, "%s does not parse.", name) }
	badText, badTags := Param[string]{Err: bad("email")}, Param[[]string]{Err: bad("tag_ids")}
	for _, tc := range []struct {
		name string
		in   PersonListParams
		want domain.PersonSelection
		// params named by the 400, when one is wanted
		invalid []string
	}{
		{"list persons 1: without updated_since, email or external_id it is a 400 naming all three",
			PersonListParams{TagIDs: tags("tag_a")}, domain.PersonSelection{}, []string{"updated_since", "external_id", "email"}},
		{"list persons 2: updated_since selects window mode",
			PersonListParams{UpdatedSince: since(recent)}, domain.PersonSelection{Mode: domain.PersonWindow, Since: recent}, nil},
		{"list persons 2 and section 8: updated_since more than 30 days back is a 400",
			PersonListParams{UpdatedSince: since(tooOld)}, domain.PersonSelection{}, []string{"updated_since"}},
		{"list persons 2: external_id and tag_ids filter the window",
			PersonListParams{UpdatedSince: since(recent), ExternalID: given("e"), TagIDs: tags("tag_a", "tag_b")},
			domain.PersonSelection{Mode: domain.PersonWindow, Since: recent, ExternalID: text("e"), TagIDs: []string{"tag_a", "tag_b"}}, nil},
		{"list persons 2: email is ignored in window mode",
			PersonListParams{UpdatedSince: since(recent), Email: given("a@x.test")}, domain.PersonSelection{Mode: domain.PersonWindow, Since: recent}, nil},
		{"list persons 2: an ignored email is never a 400, however malformed",
			PersonListParams{UpdatedSince: since(recent), Email: badText}, domain.PersonSelection{Mode: domain.PersonWindow, Since: recent}, nil},
		{"list persons 2: bad tag_ids are a 400 in window mode",
			PersonListParams{UpdatedSince: since(recent), TagIDs: badTags}, domain.PersonSelection{}, []string{"tag_ids"}},
		{"list persons 3: external_id alone looks one person up",
			PersonListParams{ExternalID: given("e")}, domain.PersonSelection{Mode: domain.PersonByExternalID, Key: "e"}, nil},
		{"list persons 3: email alone looks one person up",
			PersonListParams{Email: given("A@x.test")}, domain.PersonSelection{Mode: domain.PersonByEmail, Key: "a@x.test"}, nil},
		{"an email is looked up in its normal form", PersonListParams{Email: given("\u212Aate@x.test")},
			domain.PersonSelection{Mode: domain.PersonByEmail, Key: "kate@x.test"}, nil},
		{"an email that cannot be an identifier is a 400", PersonListParams{Email: given("a@x.test\u200b")}, domain.PersonSelection{}, []string{"email"}},
		{"an external_id that cannot be an identifier is a 400", PersonListParams{ExternalID: given("e ")}, domain.PersonSelection{}, []string{"external_id"}},
		{"list persons 3: tag_ids is ignored in lookup mode, even when it does not parse",
			PersonListParams{Email: given("a@x.test"), TagIDs: badTags}, domain.PersonSelection{Mode: domain.PersonByEmail, Key: "a@x.test"}, nil},
		{"list persons 4 (decisions 4): with both in lookup mode, external_id decides",
			PersonListParams{ExternalID: given("e"), Email: given("a@x.test")}, domain.PersonSelection{Mode: domain.PersonByExternalID, Key: "e"}, nil},
		{"list persons 4: an email beside external_id is ignored, however malformed",
			PersonListParams{ExternalID: given("e"), Email: badText}, domain.PersonSelection{Mode: domain.PersonByExternalID, Key: "e"}, nil},
		{"list persons 3: a malformed email that would select is a 400",
			PersonListParams{Email: badText}, domain.PersonSelection{}, []string{"email"}},
		{"a malformed external_id is a 400 in either mode",
			PersonListParams{UpdatedSince: since(recent), ExternalID: Param[string]{Err: bad("external_id")}}, domain.PersonSelection{}, []string{"external_id"}},
		{"a malformed updated_since is a 400 before anything else",
			PersonListParams{UpdatedSince: Param[time.Time]{Err: bad("updated_since")}, Email: given("a@x.test")}, domain.PersonSelection{}, []string{"updated_since"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SelectPersons(tc.in, now)
			if tc.invalid == nil {
				if err != nil || !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("selection %+v, %v; want %+v", got, err, tc.want)
				}
				return
			}
			var ve *domain.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("got %+v, %v; want a 400 naming %v", got, err, tc.invalid)
			}
			var named []string
			for _, e := range ve.Errors {
				named = append(named, e.Parameter)
			}
			if !slices.Equal(named, tc.invalid) {
				t.Fatalf("400 names %v, want %v", named, tc.invalid)
			}
		})
	}
}
