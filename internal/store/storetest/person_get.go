package storetest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/pds-dev/pds/internal/domain"
)

// testGetPerson holds Get Person (one statement, its details aggregated by
// the engine) to what a list reads for the same person (a statement per
// detail): the same live tags in the order they were attached, then by id;
// the same live Person custom field values; text that needs escaping in
// JSON intact; nothing archived, nothing of another account.
func testGetPerson(t *testing.T, newStore NewStore) {
	ctx := context.Background()
	c := newPersonCase(t, newStore(t))
	odd := "quote \" backslash \\ tab \t newline \n ünïcödé ✓ 😀 </script>"
	first, second, third := c.tag("first "+odd), c.tag("same time a"), c.tag("same time b")
	archived := c.tag("archived later")
	plan, n := c.field("Person", "plan", "str"), c.field("Person", "n", "int")
	gone := c.field("Person", "gone", "str")
	c.other().tag("foreign")

	bare, _ := c.upsert(domain.PersonUpsert{ExternalID: setText("bare")})
	p, _ := c.upsert(domain.PersonUpsert{ExternalID: setText("full"), FirstName: setText(odd),
		CustomFields: fieldValues(map[string]any{plan.Key: odd, n.Key: 5, gone.Key: "hidden"})})
	c.advance(time.Minute)
	if _, err := c.st.AddPersonTags(ctx, c.acc, p.ID, []string{first, archived}, c.write()); err != nil {
		t.Fatal(err)
	}
	c.advance(time.Minute)
	if _, err := c.st.AddPersonTags(ctx, c.acc, p.ID, []string{third, second}, c.write()); err != nil {
		t.Fatal(err)
	}
	if err := c.st.ArchiveTag(ctx, c.acc, archived, c.now()); err != nil {
		t.Fatal(err)
	}
	if err := c.st.ArchiveCustomField(ctx, c.acc, gone.ID, c.now()); err != nil {
		t.Fatal(err)
	}

	sameTime := []string{second, third}
	slices.Sort(sameTime)
	got := c.get(p.ID)
	if want := append([]string{first}, sameTime...); !slices.Equal(got.TagIDs, want) {
		t.Fatalf("tag ids %v, want %v (attached first, then the two attached together by id)", got.TagIDs, want)
	}
	names := map[string]string{first: "first " + odd, second: "same time a", third: "same time b"}
	for i, id := range got.TagIDs {
		if got.TagNames[i] != names[id] {
			t.Fatalf("tag names %q do not follow tag ids %v", got.TagNames, got.TagIDs)
		}
	}
	if want := map[string]string{plan.Key: odd, n.Key: "5"}; !cmp.Equal(got.CustomFields, want) {
		t.Fatalf("custom fields %q, want %q", got.CustomFields, want)
	}
	if got.FirstName == nil || *got.FirstName != odd {
		t.Fatalf("first name %q", textOf(got.FirstName))
	}
	for _, id := range []string{p.ID, bare.ID} {
		one := c.get(id)
		ext := *one.ExternalID
		listed, _, err := c.st.ListPersons(ctx, c.acc, domain.PersonSelection{Mode: domain.PersonByExternalID, Key: ext},
			domain.PageRequest{Page: 1, Size: 25})
		if err != nil || len(listed) != 1 {
			t.Fatalf("list %s: %d persons, %v", ext, len(listed), err)
		}
		if diff := cmp.Diff(*one, listed[0]); diff != "" {
			t.Fatalf("%s: Get Person and List Persons differ (-get +list):\n%s", ext, diff)
		}
	}
	if b := c.get(bare.ID); b.TagIDs == nil || b.TagNames == nil || b.CustomFields == nil {
		t.Fatalf("a person without tags or values reads nil collections (null in JSON): %+v", b)
	}

	// Get Persons reads each as Get Person does, and nothing absent or of
	// another account.
	foreign, _ := c.other().upsert(domain.PersonUpsert{ExternalID: setText("full")})
	many, err := c.st.GetPersons(ctx, c.acc, []string{p.ID, "per_absent", foreign.ID, bare.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(many) != 2 {
		t.Fatalf("Get Persons read %d persons, want the account's 2: %v", len(many), slices.Collect(maps.Keys(many)))
	}
	for _, id := range []string{p.ID, bare.ID} {
		if got, want := many[id], c.get(id); got == nil || !cmp.Equal(*got, *want) {
			t.Fatalf("%s: Get Persons and Get Person differ (-many +get):\n%s", id, cmp.Diff(got, want))
		}
	}
	// More ids than one statement takes: the person named last is read too.
	long := make([]string, 0, 151)
	for i := range 150 {
		long = append(long, fmt.Sprintf("per_absent%d", i))
	}
	if got, err := c.st.GetPersons(ctx, c.acc, append(long, bare.ID)); err != nil || len(got) != 1 || got[bare.ID] == nil {
		t.Fatalf("Get Persons of 151 ids, the last one present: %d persons, %v", len(got), err)
	}
	if none, err := c.st.GetPersons(ctx, c.acc, nil); err != nil || len(none) != 0 {
		t.Fatalf("Get Persons of no ids: %v, %v", none, err)
	}
}
