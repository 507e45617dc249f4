package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// mergeExportCases: the export carries a survivor's aliases (issue 65),
// in every chunk size and through OpenExport's snapshot, and only the
// survivor's; a filtered export carries those of the persons it keeps.
func mergeExportCases(t *testing.T, st store.Store) {
	t.Run("the export carries the survivor's aliases", func(t *testing.T) {
		c := newPersonCase(t, st)
		vip := c.tag("vip")
		a, _ := c.upsert(domain.PersonUpsert{Email: set("a@example.test"), ExternalID: set("ext-a")})
		b, _ := c.upsert(domain.PersonUpsert{Email: set("B@example.test"), ExternalID: set("ext-b"), FID: set("f-b")})
		plain, _ := c.upsert(domain.PersonUpsert{Email: set("plain@example.test")})
		d, _ := c.upsert(domain.PersonUpsert{Email: set("d@example.test")})
		e, _ := c.upsert(domain.PersonUpsert{Email: set("e@example.test")})
		c.merge(a.ID, b.ID)
		c.merge(d.ID, e.ID)
		if _, err := st.AddPersonTags(context.Background(), c.acc, d.ID, []string{vip}, c.write()); err != nil {
			t.Fatal(err)
		}
		want := map[string][]string{a.ID: aliasText(c.aliases(a.ID)), d.ID: aliasText(c.aliases(d.ID)), plain.ID: nil}
		if len(want[a.ID]) != 2 || len(want[d.ID]) != 1 {
			t.Fatalf("aliases before the export: %v", want)
		}
		check := func(how string, got []domain.Person, keep ...string) {
			t.Helper()
			var ids []string
			for _, p := range got {
				ids = append(ids, p.ID)
				if as := aliasText(p.Aliases); !slices.Equal(as, want[p.ID]) {
					t.Errorf("%s: %s exported with aliases %v, want %v", how, p.ID, as, want[p.ID])
				}
			}
			if !sameSet(ids, keep) {
				t.Errorf("%s exported %v, want %v", how, ids, keep)
			}
		}
		for _, size := range []int{1, 2, 100} {
			var all []domain.Person
			sel := domain.PersonExport{}
			for {
				chunk, err := st.ExportPersons(context.Background(), c.acc, sel, size)
				if err != nil {
					t.Fatal(err)
				}
				all = append(all, chunk...)
				if len(chunk) < size {
					break
				}
				sel.After = chunk[len(chunk)-1].ID
			}
			check(fmt.Sprintf("chunks of %d", size), all, a.ID, d.ID, plain.ID)
		}
		tagged, err := st.ExportPersons(context.Background(), c.acc, domain.PersonExport{TagIDs: []string{vip}}, 100)
		if err != nil {
			t.Fatal(err)
		}
		check("the tag filter", tagged, d.ID)
		exp, err := st.OpenExport(context.Background(), c.acc)
		if err != nil {
			t.Fatal(err)
		}
		defer exp.Close()
		snap, err := exp.Read(context.Background(), domain.PersonExport{}, 100)
		if err != nil {
			t.Fatal(err)
		}
		check("the snapshot", snap, a.ID, d.ID, plain.ID)
	})
}

// mergeChainFeedCases: when C, which absorbed B, is merged into A, a
// follower of the change feed that read B's tombstone (merged into C)
// reads it again, merged into A, with C's, before A's entry.
func mergeChainFeedCases(t *testing.T, st store.Store) {
	t.Run("a chain moves the absorbed tombstones to the end", func(t *testing.T) {
		c := newPersonCase(t, st)
		f := &feed{c: c}
		a, _ := c.upsert(domain.PersonUpsert{Email: set("a@example.test")})
		cc, _ := c.upsert(domain.PersonUpsert{Email: set("c@example.test")})
		b, _ := c.upsert(domain.PersonUpsert{Email: set("b@example.test")})
		c.merge(cc.ID, b.ID)
		f.read(100)
		c.advance(time.Second)
		c.merge(a.ID, cc.ID)
		got := f.read(100)
		into := map[string]string{}
		for _, e := range got {
			if e.Deleted != nil && e.Deleted.MergedInto != nil {
				into[e.PersonID] = *e.Deleted.MergedInto
			}
		}
		if len(got) != 3 || into[b.ID] != a.ID || into[cc.ID] != a.ID || got[2].PersonID != a.ID || got[2].Person == nil {
			t.Fatalf("the feed after the chain's merge: %v (merged into %v); want the tombstones of %s and %s, merged into %s, then %s",
				ids(got), into, b.ID, cc.ID, a.ID, a.ID)
		}
		for _, e := range got[:2] {
			if !e.Deleted.At.Equal(c.now()) {
				t.Errorf("tombstone of %s changed at %v, want the merge's time %v", e.PersonID, e.Deleted.At, c.now())
			}
		}
	})
}
