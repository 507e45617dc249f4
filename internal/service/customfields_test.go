package service

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

func TestFieldKeyCollision(t *testing.T) {
	archivedAt := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	live := domain.CustomField{ID: "cf_live", Collection: "Person", Key: "tier"}
	archived := domain.CustomField{ID: "cf_old", Collection: "Person", Key: "tier", ArchivedAt: &archivedAt}
	for _, tc := range []struct {
		name   string
		holder domain.CustomField
		detail string // a phrase the 409's detail must hold
	}{
		{"create custom field 2: a live field holding (collection, key) is a 409 naming it", live, "already uses the key"},
		{"decisions 5: an archived field keeps its key reserved, a 409 that says so", archived, "keeps the key \"tier\" in collection Person reserved"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := FieldKeyCollision(tc.holder)
			wantConflict(t, err, tc.holder.ID)
			if !strings.Contains(err.Error(), tc.detail) {
				t.Fatalf("detail %q, want it to hold %q", err, tc.detail)
			}
		})
	}
}

func TestCheckFieldLimit(t *testing.T) {
	for _, tc := range []struct {
		name        string
		live, limit int
		refused     bool
	}{
		{"create custom field 3: below the limit a field is created", 99, 100, false},
		{"create custom field 3: at the limit creating another is a 422", 100, 100, true},
		{"create custom field 3: past a lowered limit it stays a 422", 120, 100, true},
		{"decisions 5: the limit is configurable, and a limit of 0 refuses every field", 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckFieldLimit(tc.live, tc.limit)
			if !tc.refused {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var le *domain.LimitError
			if !errors.As(err, &le) || le.Limit != tc.limit || le.Current != tc.live {
				t.Fatalf("got %v, want the limit %d reached at %d", err, tc.limit, tc.live)
			}
		})
	}
}

func TestPatchField(t *testing.T) {
	ptr := func(s string) *string { return &s }
	set := func(s string) domain.Opt[string] { return domain.Opt[string]{Set: true, Value: s} }
	null := domain.Opt[string]{Set: true, Null: true}
	cur := domain.CustomField{ID: "cf_1", Key: "tier", Label: ptr("Tier"), Description: ptr("Loyalty"), FormType: "textarea"}
	with := func(label, description *string, formType string) domain.CustomField {
		f := cur
		f.Label, f.Description, f.FormType = label, description, formType
		return f
	}
	for _, tc := range []struct {
		name  string
		patch domain.CustomFieldPatch
		want  domain.CustomField
	}{
		{"update custom field: absent members leave their values", domain.CustomFieldPatch{}, cur},
		{"update custom field: given members replace their values",
			domain.CustomFieldPatch{Label: set("Level"), Description: set("Rank"), FormType: set("number")},
			with(ptr("Level"), ptr("Rank"), "number")},
		{"update custom field: a null label or description clears it", domain.CustomFieldPatch{Label: null, Description: null},
			with(nil, nil, "textarea")},
		{"create custom field 4: a null form_type restores the default, text", domain.CustomFieldPatch{FormType: null},
			with(ptr("Tier"), ptr("Loyalty"), domain.DefaultFormType)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := PatchField(cur, tc.patch); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("field %+v\nwant  %+v", got, tc.want)
			}
		})
	}
}

func TestFieldFormType(t *testing.T) {
	ptr := func(s string) *string { return &s }
	for _, tc := range []struct {
		name string
		in   *string
		want string
	}{
		{"create custom field 4: form_type defaults to text when absent or null", nil, domain.DefaultFormType},
		{"create custom field 4: a given form_type is kept", ptr("select"), "select"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := FieldFormType(tc.in); got != tc.want {
				t.Fatalf("form_type %q, want %q", got, tc.want)
			}
		})
	}
}
