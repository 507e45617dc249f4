package service

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/pds-dev/pds/internal/domain"
)

func TestSuppressionLookup(t *testing.T) {
	given := func(s string) Param[string] { return Param[string]{Value: &s} }
	empty := Param[string]{Err: domain.ParamError("email", "email must not be empty when given.")}
	value := func(kind, v string) domain.SuppressedValue {
		return domain.SuppressedValue{Kind: kind, Value: v, Pointer: "/" + kind}
	}
	for _, tc := range []struct {
		name   string
		in     map[string]Param[string]
		want   []domain.SuppressedValue
		lookup bool
		// parameters the 400 names, when one is wanted
		invalid []string
	}{
		{"no identifier: the whole list", map[string]Param[string]{}, nil, false, nil},
		{"an absent parameter counts as not given", map[string]Param[string]{"email": {}}, nil, false, nil},
		{"an email, in its normal form (NFKC, lower case)", map[string]Param[string]{"email": given("Ada@Ｅxample.ORG")},
			[]domain.SuppressedValue{value("email", "ada@example.org")}, true, nil},
		{"an external_id keeps its case", map[string]Param[string]{"external_id": given("CRM-1")},
			[]domain.SuppressedValue{value("external_id", "CRM-1")}, true, nil},
		{"an f_id, NFKC", map[string]Param[string]{"f_id": given("ｆ-7")},
			[]domain.SuppressedValue{value("f_id", "f-7")}, true, nil},
		{"a phone by its digits and also as written, as a write is checked",
			map[string]Param[string]{"phone": given("+44 (20) 7946-0000")},
			[]domain.SuppressedValue{value("phone", "+442079460000"), value("phone", "+44 (20) 7946-0000")}, true, nil},
		{"a phone written as its digits is one form", map[string]Param[string]{"phone": given("+442079460000")},
			[]domain.SuppressedValue{value("phone", "+442079460000")}, true, nil},
		{"two identifiers: a 400 naming both", map[string]Param[string]{"email": given("a@x.test"), "phone": given("+1 555")},
			nil, false, []string{"email", "phone"}},
		{"three identifiers: a 400 naming all three",
			map[string]Param[string]{"f_id": given("f"), "external_id": given("e"), "email": given("a@x.test")},
			nil, false, []string{"email", "external_id", "f_id"}},
		{"an empty one (refused as it was read) is its own 400", map[string]Param[string]{"email": empty},
			nil, false, []string{"email"}},
		{"an empty one beside another: the empty one is named", map[string]Param[string]{"email": empty, "f_id": given("f")},
			nil, false, []string{"email"}},
		{"not an email address", map[string]Param[string]{"email": given("nobody")}, nil, false, []string{"email"}},
		{"white space at an end", map[string]Param[string]{"external_id": given("crm-1 ")}, nil, false, []string{"external_id"}},
		{"an invisible character", map[string]Param[string]{"f_id": given("f\u200b1")}, nil, false, []string{"f_id"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, lookup, err := SuppressionLookup(tc.in)
			if tc.invalid != nil {
				var ve *domain.ValidationError
				if !errors.As(err, &ve) {
					t.Fatalf("want a 400 naming %v, got %v", tc.invalid, err)
				}
				var names []string
				for _, e := range ve.Errors {
					names = append(names, e.Parameter)
				}
				if !slices.Equal(names, tc.invalid) {
					t.Fatalf("the 400 names %v, want %v (%s)", names, tc.invalid, ve.Detail)
				}
				return
			}
			if err != nil || lookup != tc.lookup || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v %v %v, want %v %v", got, lookup, err, tc.want, tc.lookup)
			}
		})
	}
}
