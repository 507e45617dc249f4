package service

import (
	"errors"
	"strings"
	"testing"

	"github.com/pds-dev/pds/internal/domain"
)

func text(s string) *string { return &s }

// holder builds a Holder; "" leaves an identifier unset. email is given as
// stored, already in compared form.
func holder(id, externalID, email, fID string) Holder {
	return Holder{ID: id, ExternalID: externalID, EmailNorm: email, FID: fID}
}

// wantConflict checks err is a 409 naming existingID, or nil when existingID is "".
func wantConflict(t *testing.T, err error, existingID string) {
	t.Helper()
	var c *domain.ConflictError
	switch {
	case existingID == "" && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case existingID == "":
	case !errors.As(err, &c):
		t.Fatalf("got %v, want a conflict naming %s", err, existingID)
	case c.ExistingID != existingID || !strings.Contains(c.Detail, existingID):
		t.Fatalf("conflict %+v, want it to name %s", c, existingID)
	}
}

func TestUpsertTarget(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ids      domain.Identifiers
		holders  []Holder
		want     PersonTarget
		conflict string
	}{
		{"upsert 1: nothing matches, so a person is created",
			domain.Identifiers{ExternalID: text("e"), Email: text("a@x.test")}, nil, PersonTarget{Create: true}, ""},
		{"upsert 1: no identifier at all creates a person",
			domain.Identifiers{}, nil, PersonTarget{Create: true}, ""},
		{"upsert 1: matches by external_id",
			domain.Identifiers{ExternalID: text("e")}, []Holder{holder("p1", "e", "", "")}, PersonTarget{ID: "p1"}, ""},
		{"upsert 1: matches by email, case-insensitively",
			domain.Identifiers{Email: text("A@X.test")}, []Holder{holder("p1", "", "a@x.test", "")}, PersonTarget{ID: "p1"}, ""},
		{"upsert 1: matches by f_id when external_id and email match nobody",
			domain.Identifiers{ExternalID: text("new"), Email: text("new@x.test"), FID: text("f")}, []Holder{holder("p1", "", "", "f")},
			PersonTarget{ID: "p1"}, ""},
		{"upsert 1: identifiers the match already holds are no conflict",
			domain.Identifiers{ExternalID: text("e"), Email: text("a@x.test"), FID: text("f")}, []Holder{holder("p1", "e", "a@x.test", "f")},
			PersonTarget{ID: "p1"}, ""},
		{"upsert 2: a re-delivery with the same external_id matches the same person, whatever else changed",
			domain.Identifiers{ExternalID: text("e"), Email: text("moved@x.test")}, []Holder{holder("p1", "e", "old@x.test", "")},
			PersonTarget{ID: "p1"}, ""},
		{"decisions 10: external_id outranks email; the email another person holds is a 409 naming it",
			domain.Identifiers{ExternalID: text("e"), Email: text("a@x.test")},
			[]Holder{holder("p2", "", "a@x.test", ""), holder("p1", "e", "", "")}, PersonTarget{ID: "p1"}, "p2"},
		{"decisions 10: email outranks f_id; the f_id another person holds is a 409 naming it",
			domain.Identifiers{Email: text("a@x.test"), FID: text("f")},
			[]Holder{holder("p3", "", "", "f"), holder("p2", "", "a@x.test", "")}, PersonTarget{ID: "p2"}, "p3"},
		{"decisions 10: with two other holders the 409 names the one first in match order",
			domain.Identifiers{ExternalID: text("e"), Email: text("a@x.test"), FID: text("f")},
			[]Holder{holder("p3", "", "", "f"), holder("p2", "", "a@x.test", ""), holder("p1", "e", "", "")}, PersonTarget{ID: "p1"}, "p2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := UpsertTarget(tc.ids, tc.holders)
			wantConflict(t, err, tc.conflict)
			if got != tc.want {
				t.Fatalf("target %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestCheckIdentifiersFree(t *testing.T) {
	for _, tc := range []struct {
		name     string
		person   string
		ids      domain.Identifiers
		holders  []Holder
		conflict string
	}{
		{"decisions 4: an email nobody holds is free", "p1", domain.Identifiers{Email: text("a@x.test")}, nil, ""},
		{"decisions 4: the person's own email is free, in any case", "p1", domain.Identifiers{Email: text("A@x.test")},
			[]Holder{holder("p1", "", "a@x.test", "")}, ""},
		{"decisions 4: an email another person holds, in any case, is a 409 naming it", "p1", domain.Identifiers{Email: text("A@X.TEST")},
			[]Holder{holder("p2", "", "a@x.test", "")}, "p2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantConflict(t, CheckIdentifiersFree(tc.person, tc.ids, tc.holders), tc.conflict)
		})
	}
}

func TestMatchOrCreate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ids     domain.Identifiers
		holders []Holder
		want    PersonTarget
	}{
		{"decisions 6: identifiers that match nobody create a person", domain.Identifiers{Email: text("new@x.test")}, nil,
			PersonTarget{Create: true}},
		{"decisions 6: matched as in Upsert, external_id first", domain.Identifiers{ExternalID: text("e"), FID: text("f")},
			[]Holder{holder("p2", "", "", "f"), holder("p1", "e", "", "")}, PersonTarget{ID: "p1"}},
		{"decisions 6: an unknown external_id falls through to the email, in any case", domain.Identifiers{ExternalID: text("nobody"), Email: text("B@X.test")},
			[]Holder{holder("p2", "", "b@x.test", "")}, PersonTarget{ID: "p2"}},
		{"decisions 10: resolution only matches, so identifiers held by other persons are no conflict",
			domain.Identifiers{Email: text("a@x.test"), FID: text("f")},
			[]Holder{holder("p3", "", "", "f"), holder("p2", "", "a@x.test", "")}, PersonTarget{ID: "p2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := MatchOrCreate(tc.ids, tc.holders); got != tc.want {
				t.Fatalf("target %+v, want %+v", got, tc.want)
			}
		})
	}
}
