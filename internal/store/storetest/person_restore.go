package storetest

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/personview"
	"github.com/pds-dev/pds/internal/store"
)

// exportLines is the whole export of the account, as GET /persons/export
// writes its lines.
func (c *personCase) exportLines() ([]domain.Person, []string) {
	c.t.Helper()
	persons, err := c.st.ExportPersons(context.Background(), c.acc, domain.PersonExport{}, 1000)
	if err != nil {
		c.t.Fatal(err)
	}
	lines := make([]string, len(persons))
	for i := range persons {
		lines[i] = string(personview.AppendExportLine(nil, &persons[i]))
	}
	return persons, lines
}

// restoreLines are the export's lines as pds import persons decodes them.
func restoreLines(t *testing.T, persons []domain.Person) iter2 {
	return func(yield func(store.PersonImport, error) bool) {
		for i, p := range persons {
			line := personview.Exported(&p)
			raw, _ := json.Marshal(map[string]any{"email": line.Email, "external_id": line.ExternalID, "f_id": line.FID,
				"first_name": line.FirstName, "last_name": line.LastName, "phone": line.Phone, "custom_fields": line.CustomFields})
			var in domain.PersonUpsert
			if err := json.Unmarshal(raw, &in); err != nil {
				t.Fatal(err)
			}
			created, seen := line.DateCreated.Time, line.DateLastSeen.Time
			rec := store.PersonImport{Line: i + 1, Person: in, ID: line.ID, TagIDs: slices.Clone(line.TagIDs), HasTagIDs: true,
				DateCreated: &created, DateLastSeen: &seen}
			if !yield(rec, nil) {
				return
			}
		}
	}
}

type iter2 = func(yield func(store.PersonImport, error) bool)

// testRestorePersons: importing an export into its account puts every
// person back as exported (attributes, identifiers, values, tags, dates),
// and importing it again changes nothing.
func testRestorePersons(t *testing.T, newStore NewStore) {
	c := newPersonCase(t, newStore(t))
	t1, t2 := c.tag("t1"), c.tag("t2")
	c.field("Person", "score", "int")
	c.field("Person", "city", "text")
	str := func(s string) domain.Opt[string] { return domain.Opt[string]{Set: true, Value: s} }
	a, _ := c.upsert(domain.PersonUpsert{Email: str("ada@example.org"), ExternalID: str("crm-1"), FID: str("f-1"),
		FirstName: str("Ada"), CustomFields: domain.Opt[map[string]json.RawMessage]{Set: true,
			Value: map[string]json.RawMessage{"score": json.RawMessage(`5`)}}})
	c.advance(time.Minute)
	b, _ := c.upsert(domain.PersonUpsert{ExternalID: str("crm-2"), LastName: str("Babbage")})
	if _, err := c.st.AddPersonTags(context.Background(), c.acc, a.ID, []string{t1}, c.write()); err != nil {
		t.Fatal(err)
	}
	persons, want := c.exportLines()

	// Changes after the export: every one is undone by the restore.
	c.advance(time.Hour)
	if _, err := c.st.UpdatePerson(context.Background(), c.acc, a.ID, domain.PersonUpdate{FirstName: str("Augusta"),
		Email: str("augusta@example.org"), CustomFields: domain.Opt[map[string]json.RawMessage]{Set: true,
			Value: map[string]json.RawMessage{"score": json.RawMessage(`7`), "city": json.RawMessage(`"London"`)}}}, c.write()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.st.AddPersonTags(context.Background(), c.acc, b.ID, []string{t1, t2}, c.write()); err != nil {
		t.Fatal(err)
	}
	if err := c.st.RemovePersonTag(context.Background(), c.acc, a.ID, t1, c.write()); err != nil {
		t.Fatal(err)
	}

	c.advance(time.Hour)
	res, err := c.st.ImportPersons(context.Background(), c.acc, restoreLines(t, persons), c.write())
	if err != nil {
		t.Fatal(err)
	}
	if res.Updated != 2 || res.Created != 0 {
		t.Errorf("restore counts %+v, want 2 updated", res.PersonImportCounts)
	}
	_, got := c.exportLines()
	if !slices.Equal(got, want) {
		t.Fatalf("after the restore the export is\n%v\nwant\n%v", got, want)
	}
	res, err = c.st.ImportPersons(context.Background(), c.acc, restoreLines(t, persons), c.write())
	if err != nil {
		t.Fatal(err)
	}
	if res.Unchanged != 2 {
		t.Errorf("a second restore counts %+v, want 2 unchanged", res.PersonImportCounts)
	}
	if _, again := c.exportLines(); !slices.Equal(again, want) {
		t.Fatalf("after a second restore the export is\n%v\nwant\n%v", again, want)
	}
}
