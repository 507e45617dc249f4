package service_test

import (
	"slices"
	"testing"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
)

func TestChangedMembers(t *testing.T) {
	s := func(v string) *string { return &v }
	ada := domain.TrackedMembers{Email: s("ada@example.com"), ExternalID: s("crm-1"), FirstName: s("Ada"), LastName: s("Lovelace"),
		TagIDs: []string{"tag_b", "tag_a"}, CustomFields: map[string]string{"plan": "gold", "score": "3"}}
	with := func(edit func(m *domain.TrackedMembers)) domain.TrackedMembers {
		m := ada
		m.TagIDs = slices.Clone(ada.TagIDs)
		m.CustomFields = map[string]string{"plan": "gold", "score": "3"}
		edit(&m)
		return m
	}
	for _, c := range []struct {
		name  string
		start *domain.TrackedMembers
		end   domain.TrackedMembers
		want  []string
	}{
		{"nothing changed", &ada, ada, []string{}},
		{"email changed", &ada, with(func(m *domain.TrackedMembers) { m.Email = s("ada@lovelace.name") }), []string{"email"}},
		{"email cleared", &ada, with(func(m *domain.TrackedMembers) { m.Email = nil }), []string{"email"}},
		{"phone set", &ada, with(func(m *domain.TrackedMembers) { m.Phone = s("+44 20 7946 0958") }), []string{"phone"}},
		{"every attribute, in order", &ada, with(func(m *domain.TrackedMembers) {
			m.Phone, m.LastName, m.FirstName, m.ExternalID, m.Email = s("1"), s("L"), s("A"), s("crm-2"), s("a@b.c")
		}), []string{"email", "external_id", "first_name", "last_name", "phone"}},
		{"a tag added", &ada, with(func(m *domain.TrackedMembers) { m.TagIDs = append(m.TagIDs, "tag_c") }), []string{"tag_ids"}},
		{"the last tag removed", &ada, with(func(m *domain.TrackedMembers) { m.TagIDs = nil }), []string{"tag_ids"}},
		{"tags in another order are the same tags", &ada, with(func(m *domain.TrackedMembers) { m.TagIDs = []string{"tag_a", "tag_b"} }), []string{}},
		{"a custom value changed", &ada, with(func(m *domain.TrackedMembers) { m.CustomFields["plan"] = "silver" }), []string{"custom_fields.plan"}},
		{"a custom value removed", &ada, with(func(m *domain.TrackedMembers) { delete(m.CustomFields, "score") }), []string{"custom_fields.score"}},
		{"custom values added, by key", &ada, with(func(m *domain.TrackedMembers) { m.CustomFields["zone"], m.CustomFields["age"] = "eu", "36" }),
			[]string{"custom_fields.age", "custom_fields.zone"}},
		{"the issue's example", &ada, with(func(m *domain.TrackedMembers) {
			m.Email, m.TagIDs, m.CustomFields["plan"] = s("x@y.z"), []string{"tag_a"}, "free"
		}), []string{"email", "tag_ids", "custom_fields.plan"}},
		{"changed and changed back within the burst: the end equals the start", &ada, with(func(m *domain.TrackedMembers) {}), []string{}},
		{"an unknown start is an empty person: every member held", nil, ada,
			[]string{"email", "external_id", "first_name", "last_name", "tag_ids", "custom_fields.plan", "custom_fields.score"}},
		{"an unknown start of an empty person lists nothing", nil, domain.TrackedMembers{TagIDs: []string{}, CustomFields: map[string]string{}}, []string{}},
		{"empty and absent collections are alike", &domain.TrackedMembers{}, domain.TrackedMembers{TagIDs: []string{}, CustomFields: map[string]string{}}, []string{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := service.ChangedMembers(c.start, c.end)
			if got == nil || !slices.Equal(got, c.want) {
				t.Fatalf("ChangedMembers = %#v, want %#v", got, c.want)
			}
		})
	}
}

func TestWithChanges(t *testing.T) {
	body := []byte(`{"id":"x","event":"person.deleted","created":"t","data":{"id":"p"}}`)
	if got := string(domain.WithChanges(body, nil)); got != `{"id":"x","event":"person.deleted","created":"t","data":{"id":"p"},"changes":[]}` {
		t.Fatalf("WithChanges = %s", got)
	}
	if got := string(domain.WithChanges(body, []string{"email"})); got != `{"id":"x","event":"person.deleted","created":"t","data":{"id":"p"},"changes":["email"]}` {
		t.Fatalf("WithChanges = %s", got)
	}
}
