package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// importLine is a line of a person import whose tags are named, so that the
// same lines can be applied to two accounts.
type importLine struct {
	in   domain.PersonUpsert
	tags []string
}

// lineSeq yields the lines as an import reads them, tag names resolved.
func lineSeq(lines []importLine, tagID map[string]string) iter.Seq2[store.PersonImport, error] {
	return func(yield func(store.PersonImport, error) bool) {
		for i, l := range lines {
			rec := store.PersonImport{Line: i + 1, Person: l.in}
			for _, name := range l.tags {
				id, ok := tagID[name]
				if !ok {
					id = name // not a tag of the account: kept as given
				}
				rec.TagIDs = append(rec.TagIDs, id)
			}
			if !yield(rec, nil) {
				return
			}
		}
	}
}

func (c *personCase) importLines(lines []importLine, tagID map[string]string) (store.PersonImportCounts, error) {
	res, err := c.st.ImportPersons(context.Background(), c.acc, lineSeq(lines, tagID), c.write())
	if err == nil && res.AnalyzeErr != nil {
		err = fmt.Errorf("statistics after the import: %w", res.AnalyzeErr)
	}
	return res.PersonImportCounts, err
}

// allPersons reads every person of the account through window mode.
func (c *personCase) allPersons() []domain.Person {
	c.t.Helper()
	since := Epoch.Add(-24 * time.Hour)
	var out []domain.Person
	for page := 1; ; page++ {
		ps, total, err := c.st.ListPersons(context.Background(), c.acc, domain.PersonSelection{Mode: domain.PersonWindow, Since: since},
			domain.PageRequest{Page: page, Size: 100})
		if err != nil {
			c.t.Fatal(err)
		}
		out = append(out, ps...)
		if page*100 >= total {
			return out
		}
	}
}

// signature is what two accounts' persons are compared by: everything an
// upsert and its tags write, without ids and times.
func signature(p domain.Person) string {
	tags := slices.Clone(p.TagNames)
	slices.Sort(tags)
	var fields []string
	for k, v := range p.CustomFields {
		fields = append(fields, k+"="+v)
	}
	slices.Sort(fields)
	return strings.Join([]string{textOf(p.ExternalID), textOf(p.Email), textOf(p.FID), textOf(p.FirstName),
		textOf(p.LastName), textOf(p.Phone), p.UpsertResult, strings.Join(tags, ","), strings.Join(fields, ",")}, "|")
}

// wantImportedThrough checks the account after an import that failed: its
// persons before the import (before), and those of the lines it says it
// imported (each line a new person), nothing more.
func (c *personCase) wantImportedThrough(what string, res store.PersonImportResult, before int) {
	c.t.Helper()
	through := res.ImportedThrough
	if through < 0 || through >= 601 || res.Created+res.Updated+res.Unchanged != through {
		c.t.Fatalf("%s: imported through line %d, counted %+v", what, through, res.PersonImportCounts)
	}
	if ps := c.allPersons(); len(ps) != before+through {
		c.t.Fatalf("%s: %d persons after a failed import through line %d, want %d", what, len(ps), through, before+through)
	}
}

func testImportPersons(t *testing.T, newStore NewStore) {
	st := newStore(t)
	ctx := context.Background()

	t.Run("creates persons with their tags, values and events", func(t *testing.T) {
		c := newPersonCase(t, st)
		c.field("Person", "score", "int")
		tags := map[string]string{"A": c.tag("A"), "B": c.tag("B")}
		lines := []importLine{
			{domain.PersonUpsert{ExternalID: setText("x-1"), Email: setText("One@Example.com"), FirstName: setText("One"),
				CustomFields: fieldValues(map[string]any{"score": 5})}, []string{"A", "B", "A"}},
			{domain.PersonUpsert{Email: setText("two@example.com"), Phone: setText("+1")}, []string{"B"}},
			{domain.PersonUpsert{FID: setText("f-3")}, nil},
			{domain.PersonUpsert{}, nil},
		}
		counts, err := c.importLines(lines, tags)
		if err != nil || counts != (store.PersonImportCounts{Created: 4}) {
			t.Fatalf("import: %+v, %v", counts, err)
		}
		ps := c.allPersons()
		if len(ps) != 4 {
			t.Fatalf("%d persons, want 4", len(ps))
		}
		byExt := map[string]domain.Person{}
		for _, p := range ps {
			byExt[textOf(p.ExternalID)+"/"+textOf(p.Email)] = p
			if p.UpsertResult != domain.UpsertCreated || !p.DateLastSeen.Equal(c.now()) || !p.DateCreated.Equal(c.now()) {
				t.Fatalf("person %+v: want created, seen and created now", p)
			}
			c.wantBurst(p.ID, domain.EventPersonCreated, c.now(), c.now())
			if !strings.HasPrefix(p.ID, domain.PersonIDPrefix+"_") || len(p.ID) != len(domain.NewID(domain.PersonIDPrefix)) {
				t.Fatalf("id %q is not shaped as a person id", p.ID)
			}
		}
		one := byExt["x-1/one@example.com"]
		if !sameSet(one.TagIDs, []string{tags["A"], tags["B"]}) || one.CustomFields["score"] != "5" || textOf(one.FirstName) != "One" {
			t.Fatalf("first line's person: %+v", one)
		}
		if two := byExt["<nil>/two@example.com"]; !slices.Equal(two.TagIDs, []string{tags["B"]}) || textOf(two.Phone) != "+1" {
			t.Fatalf("second line's person: %+v", two)
		}
		// The stored persons are matched like any others.
		p, created := c.upsert(domain.PersonUpsert{Email: setText("ONE@example.com")})
		if created || p.ID != one.ID {
			t.Fatalf("upsert by the imported email: %s (created %v), want %s", p.ID, created, one.ID)
		}
	})

	t.Run("re-import: unchanged, then updated", func(t *testing.T) {
		c := newPersonCase(t, st)
		tags := map[string]string{"A": c.tag("A"), "B": c.tag("B")}
		var lines []importLine
		for i := range 700 {
			lines = append(lines, importLine{domain.PersonUpsert{ExternalID: setText(fmt.Sprint("ext-", i)),
				Email: setText(fmt.Sprintf("p%d@example.com", i)), LastName: setText("L")}, []string{"A"}})
		}
		if counts, err := c.importLines(lines, tags); err != nil || counts.Created != 700 {
			t.Fatalf("first import: %+v, %v", counts, err)
		}
		first := c.now()
		c.advance(time.Minute)
		if counts, err := c.importLines(lines, tags); err != nil || counts != (store.PersonImportCounts{Unchanged: 700}) {
			t.Fatalf("same lines again: %+v, %v", counts, err)
		}
		for _, p := range c.allPersons() {
			if p.UpsertResult != domain.UpsertUnchanged || !p.DateLastSeen.Equal(first) {
				t.Fatalf("after an unchanged re-import: %+v", p)
			}
			c.wantBurst(p.ID, domain.EventPersonCreated, first, first)
		}
		c.advance(time.Minute)
		lines[3].in.FirstName = setText("Changed")
		lines[4].tags = []string{"A", "B"}
		// The same email in another case: one normal form, nothing changes.
		lines[5].in.Email = setText("P5@EXAMPLE.COM")
		counts, err := c.importLines(lines, tags)
		if err != nil || counts != (store.PersonImportCounts{Updated: 2, Unchanged: 698}) {
			t.Fatalf("two lines changed: %+v, %v", counts, err)
		}
		for _, p := range c.allPersons() {
			switch textOf(p.ExternalID) {
			case "ext-3", "ext-4":
				if p.UpsertResult != domain.UpsertUpdated || !p.DateLastSeen.Equal(c.now()) {
					t.Fatalf("changed person: %+v", p)
				}
				c.wantBurst(p.ID, domain.EventPersonCreated, first, c.now())
			default:
				if p.UpsertResult != domain.UpsertUnchanged || !p.DateLastSeen.Equal(first) {
					t.Fatalf("unchanged person: %+v", p)
				}
			}
		}
	})

	// A refused line, or a failure of the input, ends an import: written
	// in one transaction, nothing of it stays; written a chunk at a time
	// (SQLite), the chunks committed before it stay, and the result says
	// up to which line.
	t.Run("a refused line writes nothing after the last chunk committed", func(t *testing.T) {
		c := newPersonCase(t, st)
		c.field("Person", "score", "int")
		tags := map[string]string{"A": c.tag("A"), "Gone": c.tag("Gone")}
		if err := st.ArchiveTag(ctx, c.acc, tags["Gone"], c.now()); err != nil {
			t.Fatal(err)
		}
		held, _ := c.upsert(domain.PersonUpsert{ExternalID: setText("held-ext"), Email: setText("held@example.com")})
		other, _ := c.upsert(domain.PersonUpsert{FID: setText("held-f")})
		var good []importLine
		for i := range 600 {
			good = append(good, importLine{domain.PersonUpsert{ExternalID: setText(fmt.Sprint("n-", i))}, []string{"A"}})
		}
		for _, bad := range []struct {
			name string
			line importLine
			want func(error) bool
		}{
			{"identifier of another person", importLine{in: domain.PersonUpsert{ExternalID: setText("held-ext"), FID: setText("held-f")}},
				func(err error) bool {
					var ce *domain.ConflictError
					return errors.As(err, &ce) && ce.ExistingID == other.ID
				}},
			{"unknown tag", importLine{in: domain.PersonUpsert{ExternalID: setText("t")}, tags: []string{"tag_nope"}},
				func(err error) bool { return errors.Is(err, domain.ErrNotFound) }},
			{"archived tag", importLine{in: domain.PersonUpsert{ExternalID: setText("t")}, tags: []string{"Gone"}},
				func(err error) bool { return errors.Is(err, domain.ErrNotFound) }},
			{"unknown custom field", importLine{in: domain.PersonUpsert{ExternalID: setText("t"), CustomFields: fieldValues(map[string]any{"nope": 1})}},
				isErr[*domain.ValidationError]},
			{"a value that does not fit", importLine{in: domain.PersonUpsert{ExternalID: setText("t"), CustomFields: fieldValues(map[string]any{"score": "x"})}},
				isErr[*domain.ValidationError]},
		} {
			lines := append(slices.Clone(good), bad.line)
			res, err := st.ImportPersons(ctx, c.acc, lineSeq(lines, tags), c.write())
			var le *store.ImportLineError
			if !errors.As(err, &le) || le.Line != 601 || !bad.want(err) {
				t.Fatalf("%s: %v, want an error of line 601", bad.name, err)
			}
			c.wantImportedThrough(bad.name, res, 2)
		}
		// A failure of the input itself ends the import the same way.
		boom := errors.New("the file changed")
		seq := func(yield func(store.PersonImport, error) bool) {
			for rec := range lineSeq(good, tags) {
				if !yield(rec, nil) {
					return
				}
			}
			yield(store.PersonImport{}, boom)
		}
		res, err := st.ImportPersons(ctx, c.acc, seq, c.write())
		if !errors.Is(err, boom) {
			t.Fatalf("input error: %v", err)
		}
		c.wantImportedThrough("input error", res, 2)
		if c.burst(held.ID) == nil {
			t.Fatal("the burst of a person the import did not name is gone")
		}
		if _, err := st.ImportPersons(ctx, "acc_missing", lineSeq(good, nil), c.write()); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("unknown account: %v", err)
		}
	})

	t.Run("the same as Upsert Person then Add Person Tags, line by line", func(t *testing.T) {
		imp := newPersonCase(t, st)
		api := imp.other()
		api.t = t
		tagsOf := map[*personCase]map[string]string{}
		for _, c := range []*personCase{imp, api} {
			c.field("Person", "score", "int")
			c.field("Person", "note", "str")
			tagsOf[c] = map[string]string{"A": c.tag("A"), "B": c.tag("B")}
			// Persons stored before the import, identical in both accounts.
			c.upsert(domain.PersonUpsert{ExternalID: setText("old-1"), Email: setText("old1@example.com"), FirstName: setText("Old")})
			c.upsert(domain.PersonUpsert{Email: setText("old2@example.com"), FID: setText("old-f2")})
			// An identifier held in another account matches nothing here.
			c.other().upsert(domain.PersonUpsert{ExternalID: setText("ext-7")})
		}
		imp.advance(time.Hour)
		var lines []importLine
		add := func(in domain.PersonUpsert, tags ...string) { lines = append(lines, importLine{in, tags}) }
		for i := range 530 { // more than one chunk of lines
			in := domain.PersonUpsert{ExternalID: setText(fmt.Sprint("ext-", i)), Email: setText(fmt.Sprintf("p%d@example.com", i))}
			var tags []string
			if i%3 == 0 {
				tags = append(tags, "A")
			}
			if i%5 == 0 {
				in.CustomFields = fieldValues(map[string]any{"score": i})
			}
			add(in, tags...)
			switch i {
			case 10: // the same person again within the chunk, by email in other case
				add(domain.PersonUpsert{Email: setText("P10@EXAMPLE.COM"), FirstName: setText("Ten")}, "B")
			case 20: // unchanged
				add(domain.PersonUpsert{ExternalID: setText("ext-20")})
			case 30: // a new email for a person created just before
				add(domain.PersonUpsert{ExternalID: setText("ext-30"), Email: setText("thirty@example.com")})
			case 31: // the old email of that person is free again
				add(domain.PersonUpsert{Email: setText("p30@example.com"), LastName: setText("Reuse")})
			case 40: // a tag attached to a person that holds nothing else new
				add(domain.PersonUpsert{ExternalID: setText("ext-40")}, "B")
			case 41: // email matches ext-41's person, external_id is new: the match takes it
				add(domain.PersonUpsert{Email: setText("p41@example.com"), ExternalID: setText("ext-41b")})
			case 50: // values removed, one by key, then all
				add(domain.PersonUpsert{ExternalID: setText("ext-50"), CustomFields: fieldValues(map[string]any{"score": nil, "note": "n"})})
				add(domain.PersonUpsert{ExternalID: setText("ext-50"), CustomFields: domain.Opt[map[string]json.RawMessage]{Set: true, Null: true}})
			case 60: // a person stored before the import, by email, and by f_id
				add(domain.PersonUpsert{Email: setText("OLD1@example.com"), Phone: setText("+60")}, "A")
				add(domain.PersonUpsert{FID: setText("old-f2"), ExternalID: setText("old-2")})
			case 70: // no identifier: always a new person
				add(domain.PersonUpsert{FirstName: setText("Nobody")})
				add(domain.PersonUpsert{FirstName: setText("Nobody")})
			case 520: // a person of the first chunk, from the second
				add(domain.PersonUpsert{ExternalID: setText("ext-3"), LastName: setText("Late")}, "B")
				add(domain.PersonUpsert{Email: setText("p515@example.com"), FID: setText("f-515")})
			}
		}

		counts, err := imp.importLines(lines, tagsOf[imp])
		if err != nil {
			t.Fatal(err)
		}
		var want store.PersonImportCounts
		lastOutcome := map[string]string{} // person id: what the last line touching it did
		for _, l := range lines {
			rec := l.in
			p, created, err := st.UpsertPerson(ctx, api.acc, rec, api.write())
			if err != nil {
				t.Fatalf("upsert %+v: %v", rec, err)
			}
			outcome := p.UpsertResult
			if len(l.tags) > 0 {
				var ids []string
				for _, name := range l.tags {
					ids = append(ids, tagsOf[api][name])
				}
				before := len(p.TagIDs)
				if p, err = st.AddPersonTags(ctx, api.acc, p.ID, ids, api.write()); err != nil {
					t.Fatal(err)
				}
				if !created && len(p.TagIDs) > before {
					outcome = domain.UpsertUpdated
				}
			}
			switch {
			case created:
				want.Created++
				outcome = domain.UpsertCreated
			case outcome == domain.UpsertUpdated:
				want.Updated++
			default:
				want.Unchanged++
			}
			lastOutcome[p.ID] = outcome
		}
		if counts != want {
			t.Fatalf("import counted %+v; line by line %+v", counts, want)
		}
		sigs := func(c *personCase) []string {
			var out []string
			for _, p := range c.allPersons() {
				// Line by line, Add Person Tags leaves "updated" after a
				// creation; the import writes both at once, as the line's
				// one outcome.
				if o, ok := lastOutcome[p.ID]; ok && c == api {
					p.UpsertResult = o
				}
				out = append(out, signature(p))
			}
			slices.Sort(out)
			return out
		}
		got, exp := sigs(imp), sigs(api)
		if !slices.Equal(got, exp) {
			for i := range max(len(got), len(exp)) {
				if i >= len(got) || i >= len(exp) || got[i] != exp[i] {
					t.Fatalf("persons differ (%d imported, %d line by line), first at %d:\n import: %q\n api:    %q",
						len(got), len(exp), i, at(got, i), at(exp, i))
				}
			}
		}
	})
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "<none>"
}
