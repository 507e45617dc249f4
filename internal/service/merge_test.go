package service

import (
	"errors"
	"testing"

	"github.com/pds-dev/pds/internal/domain"
)

func TestCheckMerge(t *testing.T) {
	for _, c := range []struct {
		name, survivor, from string
		bad                  bool
	}{
		{"another person", "per_a", "per_b", false},
		{"itself", "per_a", "per_a", true},
		{"none", "per_a", "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := CheckMerge(c.survivor, c.from)
			var ve *domain.ValidationError
			if got := errors.As(err, &ve); got != c.bad {
				t.Fatalf("CheckMerge(%q, %q) = %v", c.survivor, c.from, err)
			}
			if c.bad && (len(ve.Errors) != 1 || ve.Errors[0].Pointer != "/from") {
				t.Fatalf("errors %+v, want one naming /from", ve.Errors)
			}
		})
	}
}

func TestMergeIdentifier(t *testing.T) {
	for _, c := range []struct {
		name, survivor, merged string
		want                   IdentifierFate
	}{
		{"the merged person holds none", "a@x.test", "", Dropped},
		{"neither holds one", "", "", Dropped},
		{"the survivor lacks it: taken", "", "b@x.test", Taken},
		{"both hold one: the survivor keeps its own, the other is an alias", "a@x.test", "b@x.test", Aliased},
	} {
		if got := MergeIdentifier(c.survivor, c.merged); got != c.want {
			t.Errorf("%s: MergeIdentifier(%q, %q) = %d, want %d", c.name, c.survivor, c.merged, got, c.want)
		}
	}
}

func TestFillNull(t *testing.T) {
	s := func(v string) *string { return &v }
	for _, c := range []struct {
		name             string
		survivor, merged *string
		want             *string
		changes          bool
	}{
		{"the survivor's value wins", s("Ada"), s("Grace"), s("Ada"), false},
		{"a null is filled", nil, s("Grace"), s("Grace"), true},
		{"both null", nil, nil, nil, false},
		{"the merged person's null changes nothing", s("Ada"), nil, s("Ada"), false},
	} {
		got, changes := FillNull(c.survivor, c.merged)
		if !sameStr(got, c.want) || changes != c.changes {
			t.Errorf("%s: FillNull = %v, %v", c.name, got, changes)
		}
	}
}

func sameStr(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
