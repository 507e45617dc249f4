package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// testImportExportElsewhere: an account's export imported into another
// account follows the rules the README gives. Its tag ids are the first
// account's and fail the import whole; without them, each line creates a
// person that keeps its identifiers, attributes, values (matched by the
// custom field's key) and dates, and keeps its id only where no person of
// the database holds it: a new id in the same database, the line's id in
// another one.
func testImportExportElsewhere(t *testing.T, newStore NewStore) {
	ctx := context.Background()
	str := func(s string) domain.Opt[string] { return domain.Opt[string]{Set: true, Value: s} }
	src := newPersonCase(t, newStore(t))
	tagged := src.tag("vip")
	src.field("Person", "score", "int")
	ada, _ := src.upsert(domain.PersonUpsert{Email: str("ada@example.org"), ExternalID: str("crm-1"), FID: str("f-1"),
		FirstName: str("Ada"), Phone: str("+44 20 7946 0000"), CustomFields: domain.Opt[map[string]json.RawMessage]{Set: true,
			Value: map[string]json.RawMessage{"score": json.RawMessage(`5`)}}})
	src.advance(time.Minute)
	src.upsert(domain.PersonUpsert{ExternalID: str("crm-2"), LastName: str("Babbage")})
	if _, err := src.st.AddPersonTags(ctx, src.acc, ada.ID, []string{tagged}, src.write()); err != nil {
		t.Fatal(err)
	}
	exported, exportedLines := src.exportLines()
	withoutTags := func(persons []domain.Person) []domain.Person {
		out := slices.Clone(persons)
		for i := range out {
			out[i].TagIDs = nil
		}
		return out
	}

	// wantCopies checks that dst holds one person per exported one, the
	// same but for its id (sameIDs says whether it kept the line's) and its
	// tags (none).
	wantCopies := func(t *testing.T, dst *personCase, sameIDs bool) {
		t.Helper()
		got, _ := dst.exportLines()
		if len(got) != len(exported) {
			t.Fatalf("the account holds %d persons, want %d", len(got), len(exported))
		}
		byExternal := map[string]domain.Person{}
		for _, p := range got {
			byExternal[*p.ExternalID] = p
		}
		for _, want := range exported {
			p, ok := byExternal[*want.ExternalID]
			if !ok {
				t.Fatalf("no person with external_id %q after the import", *want.ExternalID)
			}
			if (p.ID == want.ID) != sameIDs {
				t.Errorf("person %s imported from %s: same id %v, want %v", p.ID, want.ID, p.ID == want.ID, sameIDs)
			}
			if len(p.TagIDs) != 0 {
				t.Errorf("person %s holds tags %v, want none", p.ID, p.TagIDs)
			}
			for _, diff := range []struct {
				field     string
				got, want any
			}{
				{"email", p.Email, want.Email},
				{"f_id", p.FID, want.FID},
				{"first_name", p.FirstName, want.FirstName},
				{"last_name", p.LastName, want.LastName},
				{"phone", p.Phone, want.Phone},
				{"custom_fields", p.CustomFields, want.CustomFields},
				{"date_created", p.DateCreated.UTC(), want.DateCreated.UTC()},
				{"date_last_seen", p.DateLastSeen.UTC(), want.DateLastSeen.UTC()},
			} {
				if !jsonEqual(t, diff.got, diff.want) {
					t.Errorf("person %s: %s is %v, want %v", p.ID, diff.field, diff.got, diff.want)
				}
			}
		}
	}

	t.Run("into another account of the same database", func(t *testing.T) {
		dst := src.other().in(t)
		dst.field("Person", "score", "int")
		dst.advance(time.Hour)
		_, err := dst.st.ImportPersons(ctx, dst.acc, restoreLines(t, exported), dst.write())
		var le *store.ImportLineError
		if !errors.As(err, &le) || !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("importing another account's tag ids: %v, want a line refused as not found", err)
		}
		if got, _ := dst.exportLines(); len(got) != 0 {
			t.Fatalf("a refused import left %d persons", len(got))
		}
		res, err := dst.st.ImportPersons(ctx, dst.acc, restoreLines(t, withoutTags(exported)), dst.write())
		if err != nil {
			t.Fatal(err)
		}
		if res.Created != 2 {
			t.Errorf("import counts %+v, want 2 created", res.PersonImportCounts)
		}
		wantCopies(t, dst, false)
		// The first account's persons are untouched.
		if _, again := src.exportLines(); !slices.Equal(again, exportedLines) {
			t.Errorf("the exported account now exports\n%v\nwant\n%v", again, exportedLines)
		}
	})

	t.Run("into an account of another database", func(t *testing.T) {
		dst := newPersonCase(t, newStore(t))
		dst.field("Person", "score", "int")
		dst.advance(time.Hour)
		res, err := dst.st.ImportPersons(ctx, dst.acc, restoreLines(t, withoutTags(exported)), dst.write())
		if err != nil {
			t.Fatal(err)
		}
		if res.Created != 2 {
			t.Errorf("import counts %+v, want 2 created", res.PersonImportCounts)
		}
		wantCopies(t, dst, true)
	})

	t.Run("a custom field the account lacks refuses the import", func(t *testing.T) {
		dst := newPersonCase(t, newStore(t))
		_, err := dst.st.ImportPersons(ctx, dst.acc, restoreLines(t, withoutTags(exported)), dst.write())
		var ve *domain.ValidationError
		if !errors.As(err, &ve) {
			t.Fatalf("importing values of a field the account lacks: %v, want a validation error", err)
		}
		if got, _ := dst.exportLines(); len(got) != 0 {
			t.Fatalf("a refused import left %d persons", len(got))
		}
	})
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func jsonEqual(t *testing.T, a, b any) bool {
	return string(mustJSON(t, a)) == string(mustJSON(t, b))
}
