package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

// exportAll reads a whole export in chunks of size, as the API does, and
// returns the ids in the order read.
func (c *personCase) exportAll(sel domain.PersonExport, size int) []string {
	c.t.Helper()
	var ids []string
	for {
		chunk, err := c.st.ExportPersons(context.Background(), c.acc, sel, size)
		if err != nil {
			c.t.Fatalf("export %+v: %v", sel, err)
		}
		for _, p := range chunk {
			ids = append(ids, p.ID)
		}
		if len(chunk) < size {
			return ids
		}
		sel.After = chunk[len(chunk)-1].ID
	}
}

func testExportPersons(t *testing.T, newStore NewStore) {
	c := newPersonCase(t, newStore(t))
	other := c.other()
	vip, staff := c.tag("vip"), c.tag("staff")
	score := c.field("Person", "score", "int")
	var ids []string
	for i := range 23 {
		p, _ := c.upsert(domain.PersonUpsert{ExternalID: setText(fmt.Sprintf("p%d", i)), CustomFields: fieldValues(map[string]any{"score": i})})
		ids = append(ids, p.ID)
		other.upsert(domain.PersonUpsert{ExternalID: setText(fmt.Sprintf("p%d", i))})
	}
	slices.Sort(ids)
	c.advance(time.Hour)
	later := c.now()
	var tagged, both []string
	for i, id := range ids {
		tags := []string{}
		if i%3 == 0 {
			tags = append(tags, vip)
		}
		if i%4 == 0 {
			tags = append(tags, staff)
		}
		if len(tags) == 0 {
			continue
		}
		if _, err := c.st.AddPersonTags(context.Background(), c.acc, id, tags, c.write()); err != nil {
			t.Fatal(err)
		}
		tagged = append(tagged, id)
		if len(tags) == 2 {
			both = append(both, id)
		}
	}

	t.Run("every person once, in id order, in any chunk size, resumed anywhere", func(t *testing.T) {
		c := c.in(t)
		for _, size := range []int{1, 5, 23, 1000} {
			if got := c.exportAll(domain.PersonExport{}, size); !slices.Equal(got, ids) {
				t.Fatalf("chunks of %d: %v, want %v", size, got, ids)
			}
		}
		if got := c.exportAll(domain.PersonExport{After: ids[9]}, 4); !slices.Equal(got, ids[10:]) {
			t.Fatalf("after the 10th: %v", got)
		}
		if got := c.exportAll(domain.PersonExport{After: ids[len(ids)-1]}, 4); len(got) != 0 {
			t.Fatalf("after the last: %v", got)
		}
	})

	t.Run("each person whole: attributes, live tags, live custom field values", func(t *testing.T) {
		c := c.in(t)
		chunk, err := c.st.ExportPersons(context.Background(), c.acc, domain.PersonExport{}, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range chunk {
			want := c.get(p.ID)
			if signature(p) != signature(*want) || !slices.Equal(p.TagIDs, want.TagIDs) ||
				!p.DateLastSeen.Equal(want.DateLastSeen) || !p.DateCreated.Equal(want.DateCreated) {
				t.Fatalf("exported %+v, read %+v", p, *want)
			}
		}
		if err := c.st.ArchiveCustomField(context.Background(), c.acc, score.ID, c.now()); err != nil {
			t.Fatal(err)
		}
		chunk, err = c.st.ExportPersons(context.Background(), c.acc, domain.PersonExport{}, 100)
		if err != nil || len(chunk) != len(ids) || len(chunk[0].CustomFields) != 0 {
			t.Fatalf("after archiving the field: %v, %+v", err, chunk[0])
		}
	})

	t.Run("updated_since of any age and tags (ALL, live) narrow it", func(t *testing.T) {
		c := c.in(t)
		if got := c.exportAll(domain.PersonExport{UpdatedSince: ptrTime(Epoch.Add(-365 * 24 * time.Hour))}, 5); !slices.Equal(got, ids) {
			t.Fatalf("a year back: %v", got)
		}
		if got := c.exportAll(domain.PersonExport{UpdatedSince: &later}, 5); !slices.Equal(got, tagged) {
			t.Fatalf("updated since: %v, want %v", got, tagged)
		}
		if got := c.exportAll(domain.PersonExport{TagIDs: []string{vip, staff, vip}}, 2); !slices.Equal(got, both) {
			t.Fatalf("two tags: %v, want %v", got, both)
		}
		if got := c.exportAll(domain.PersonExport{TagIDs: []string{staff}, UpdatedSince: &later, After: both[0]}, 2); len(got) == 0 || got[0] <= both[0] {
			t.Fatalf("tag, updated since and after: %v", got)
		}
		if got := c.exportAll(domain.PersonExport{TagIDs: []string{"tag_unknown"}}, 5); len(got) != 0 {
			t.Fatalf("an unknown tag matched %v", got)
		}
	})

	t.Run("another account sees none of it", func(t *testing.T) {
		o := other.in(t)
		got := o.exportAll(domain.PersonExport{}, 7)
		if len(got) != len(ids) {
			t.Fatalf("the other account exported %d persons, want its %d", len(got), len(ids))
		}
		for _, id := range got {
			if slices.Contains(ids, id) {
				t.Fatalf("the other account exported %s", id)
			}
		}
		if got := o.exportAll(domain.PersonExport{TagIDs: []string{vip}}, 7); len(got) != 0 {
			t.Fatalf("another account's tag matched %v", got)
		}
	})

	t.Run("an ended context ends the read", func(t *testing.T) {
		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := c.st.ExportPersons(cancelled, c.acc, domain.PersonExport{}, 10); err == nil {
			t.Fatal("an export read with an ended context succeeded")
		}
	})
}
