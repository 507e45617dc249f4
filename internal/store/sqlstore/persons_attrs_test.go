package sqlstore

import (
	"fmt"
	"testing"

	"github.com/pds-dev/pds/internal/domain"
)

func TestChangedAttributes(t *testing.T) {
	s := func(v string) *string { return &v }
	stored := attributes{Identifiers: domain.Identifiers{Email: s("Ann@Example.com"), ExternalID: s("ext-1")},
		firstName: s("Ann"), phone: s("+1")}
	with := func(change func(a *attributes)) attributes {
		a := stored
		change(&a)
		return a
	}
	for _, tc := range []struct {
		name string
		next attributes
		want string
	}{
		{"nothing differs", stored, "[]"},
		{"one name", with(func(a *attributes) { a.firstName = s("Anna") }), "[{first_name Anna}]"},
		{"a name set where none was", with(func(a *attributes) { a.lastName = s("Lee") }), "[{last_name Lee}]"},
		{"a value removed", with(func(a *attributes) { a.phone = nil }), "[{phone <nil>}]"},
		{"the email's case only: its normal form stays", with(func(a *attributes) { a.Email = s("ann@example.com") }),
			"[{email ann@example.com}]"},
		{"another email", with(func(a *attributes) { a.Email = s("bo@example.com") }),
			"[{email bo@example.com} {email_norm bo@example.com}]"},
		{"the email removed", with(func(a *attributes) { a.Email = nil }), "[{email <nil>} {email_norm <nil>}]"},
		{"identifiers", with(func(a *attributes) { a.ExternalID, a.FID = s("ext-2"), s("f-1") }),
			"[{external_id ext-2} {f_id f-1}]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := changedAttributes(stored, tc.next)
			if fmt.Sprint([]columnValue(got)) != tc.want {
				t.Fatalf("changed %v, want %s", got, tc.want)
			}
			if (got == nil) != (tc.want == "[]") {
				t.Fatalf("changed %#v: nil must mean nothing changed", got)
			}
		})
	}
}

func TestAttributeAssignments(t *testing.T) {
	args := sqlArgs{"first"}
	set := attrUpdate{{"email", "a@b.c"}, {"first_name", nil}}.assignments(&args)
	if set != "email = $2, first_name = $3" || fmt.Sprint(args) != "[first a@b.c <nil>]" {
		t.Fatalf("SET %s with %v", set, args)
	}
}
