package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

// feed is a follower of one account's change feed.
type feed struct {
	c   *personCase
	pos domain.ChangePosition
}

// read reads every entry after the follower's position, a page of size at
// a time, and moves it on.
func (f *feed) read(size int) []domain.PersonChange {
	f.c.t.Helper()
	var all []domain.PersonChange
	for {
		page, next, err := f.c.st.PersonChanges(context.Background(), f.c.acc, f.pos, size)
		if err != nil {
			f.c.t.Fatalf("read the feed after %+v: %v", f.pos, err)
		}
		if len(page) > size {
			f.c.t.Fatalf("a page of %d entries for size %d", len(page), size)
		}
		all = append(all, page...)
		// An empty page may still move the position on (PostgreSQL: to
		// the next batch), past nothing.
		f.pos = next
		if len(page) < size {
			return all
		}
	}
}

// ids lists the persons of entries, "-" before a tombstone's.
func ids(entries []domain.PersonChange) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.PersonID
		if e.Deleted != nil {
			out[i] = "-" + e.PersonID
		}
	}
	return out
}

func testChanges(t *testing.T, newStore NewStore) {
	c := newPersonCase(t, newStore(t))
	ctx := context.Background()
	start := &feed{c: c}
	if got := start.read(10); len(got) != 0 {
		t.Fatalf("a new account's feed holds %v", ids(got))
	}
	a, _ := c.upsert(domain.PersonUpsert{ExternalID: setText("a"), Email: setText("a@example.org")})
	c.advance(time.Second)
	b, _ := c.upsert(domain.PersonUpsert{ExternalID: setText("b")})
	c.advance(time.Second)
	cc, _ := c.upsert(domain.PersonUpsert{ExternalID: setText("c")})
	c.advance(time.Second)
	c.upsert(domain.PersonUpsert{ExternalID: setText("a"), FirstName: setText("Ada")})

	t.Run("one entry per person, at its latest change", func(t *testing.T) {
		f := &feed{c: c.in(t)}
		got := f.read(2)
		if want := []string{b.ID, cc.ID, a.ID}; !slices.Equal(ids(got), want) {
			t.Fatalf("feed %v, want %v (a moved to the end)", ids(got), want)
		}
		if p := got[2].Person; p == nil || p.FirstName == nil || *p.FirstName != "Ada" || p.Email == nil {
			t.Fatalf("a's entry holds %+v, want the person as it stands", got[2].Person)
		}
		if more := f.read(2); len(more) != 0 {
			t.Fatalf("after the last entry: %v", ids(more))
		}
	})

	t.Run("what moves a person and what does not", func(t *testing.T) {
		f := &feed{c: c.in(t)}
		f.read(100)
		tag := c.tag("vip")
		score := c.field("Person", "score", "int")
		_ = score
		same := func(what string) {
			t.Helper()
			if got := f.read(100); len(got) != 0 {
				t.Fatalf("%s moved %v", what, ids(got))
			}
		}
		moved := func(what string, want ...string) {
			t.Helper()
			if got := f.read(100); !slices.Equal(ids(got), want) {
				t.Fatalf("%s: feed %v, want %v", what, ids(got), want)
			}
		}
		c.advance(time.Second)
		c.upsert(domain.PersonUpsert{ExternalID: setText("b")})
		same("an upsert that changes nothing")
		c.advance(time.Second)
		c.appendCrumb(domain.BreadcrumbInput{Flavor: "page_view", ExternalID: strp("b")})
		same("a breadcrumb of an existing person")
		c.advance(time.Second)
		if _, err := c.st.AddPersonTags(ctx, c.acc, b.ID, []string{tag}, c.write()); err != nil {
			t.Fatal(err)
		}
		moved("a tag attached", b.ID)
		c.advance(time.Second)
		if _, err := c.st.AddPersonTags(ctx, c.acc, b.ID, []string{tag}, c.write()); err != nil {
			t.Fatal(err)
		}
		same("a tag attached again")
		if err := c.st.RemovePersonTag(ctx, c.acc, b.ID, tag, c.write()); err != nil {
			t.Fatal(err)
		}
		moved("a tag detached", b.ID)
		c.upsert(domain.PersonUpsert{ExternalID: setText("c"), CustomFields: fieldValues(map[string]any{"score": 5})})
		moved("a custom value set", cc.ID)
		c.upsert(domain.PersonUpsert{ExternalID: setText("c"), CustomFields: fieldValues(map[string]any{"score": 5})})
		same("a custom value set to what it is")
		c.upsert(domain.PersonUpsert{ExternalID: setText("c"), CustomFields: fieldValues(map[string]any{"score": 6})})
		moved("a custom value changed", cc.ID)
		crumb, _ := c.appendCrumb(domain.BreadcrumbInput{Flavor: "page_view", Email: strp("new@example.org")})
		moved("a breadcrumb that creates its person", crumb.PersonID)
		res := c.upsertBatch(domain.PersonUpsert{ExternalID: setText("x3")}, domain.PersonUpsert{ExternalID: setText("x1")},
			domain.PersonUpsert{ExternalID: setText("a"), LastName: setText("Lovelace")}, domain.PersonUpsert{ExternalID: setText("x2")})
		moved("a batch, in the order of its items", res[0].Person.ID, res[1].Person.ID, a.ID, res[3].Person.ID)
		if _, err := c.importLines([]importLine{
			{in: domain.PersonUpsert{ExternalID: setText("i1")}, tags: []string{"vip"}},
			{in: domain.PersonUpsert{ExternalID: setText("x2"), LastName: setText("Two")}},
			{in: domain.PersonUpsert{ExternalID: setText("i2")}},
			{in: domain.PersonUpsert{ExternalID: setText("b")}},
			{in: domain.PersonUpsert{ExternalID: setText("i3"), CustomFields: fieldValues(map[string]any{"score": 1})}},
		}, map[string]string{"vip": tag}); err != nil {
			t.Fatal(err)
		}
		byExt := func(ext string) string {
			t.Helper()
			p, _ := c.upsert(domain.PersonUpsert{ExternalID: setText(ext)})
			return p.ID
		}
		// The unchanged line (b) does not move.
		moved("an import, in the order of its lines", byExt("i1"), res[3].Person.ID, byExt("i2"), byExt("i3"))
	})

	t.Run("an erased person becomes a tombstone", func(t *testing.T) {
		f := &feed{c: c.in(t)}
		f.read(100)
		c.advance(time.Minute)
		erasedAt := c.now()
		c.erase(cc.ID, false)
		got := f.read(100)
		if len(got) != 1 || got[0].PersonID != cc.ID || got[0].Deleted == nil || got[0].Person != nil {
			t.Fatalf("after the erasure: %+v, want c's tombstone alone", got)
		}
		if !got[0].Deleted.At.Equal(erasedAt) || got[0].Deleted.MergedInto != nil {
			t.Fatalf("the tombstone says %+v, want the erasure's time %v", got[0].Deleted, erasedAt)
		}
		if all := (&feed{c: c.in(t)}).read(100); !slices.Contains(ids(all), "-"+cc.ID) || slices.Contains(ids(all), cc.ID) {
			t.Fatalf("from the start: %v, want c once, as a tombstone", ids(all))
		}
		// Tombstones older than the retention go; live entries stay.
		n, err := c.st.PruneChanges(ctx, erasedAt, 100)
		if err != nil || n != 0 {
			t.Fatalf("prune before the erasure: %d, %v", n, err)
		}
		n, err = c.st.PruneChanges(ctx, erasedAt.Add(time.Millisecond), 100)
		if err != nil || n != 1 {
			t.Fatalf("prune after the erasure: %d, %v", n, err)
		}
		if all := (&feed{c: c.in(t)}).read(100); slices.Contains(ids(all), "-"+cc.ID) || !slices.Contains(ids(all), a.ID) {
			t.Fatalf("after pruning: %v", ids(all))
		}
	})

	t.Run("another account sees nothing of this one's", func(t *testing.T) {
		o := c.other()
		o.upsert(domain.PersonUpsert{ExternalID: setText("a")})
		got := (&feed{c: o}).read(100)
		if len(got) != 1 {
			t.Fatalf("the other account's feed: %v", ids(got))
		}
		if mine := (&feed{c: c.in(t)}).read(100); slices.Contains(ids(mine), got[0].PersonID) {
			t.Fatalf("this account's feed holds the other's person")
		}
	})

	t.Run("from the head and from an export", func(t *testing.T) {
		head, err := c.st.ChangesHead(ctx, c.acc)
		if err != nil {
			t.Fatal(err)
		}
		exp, err := c.st.OpenExport(ctx, c.acc)
		if err != nil {
			t.Fatal(err)
		}
		exported, err := exp.Read(ctx, domain.PersonExport{}, 1000)
		if err != nil {
			t.Fatal(err)
		}
		pos, err := exp.Position(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// A change after the export began is not in it, and is in the
		// feed after its position; nothing the export held is.
		d, _ := c.upsert(domain.PersonUpsert{ExternalID: setText("d")})
		again, err := exp.Read(ctx, domain.PersonExport{}, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(again) != len(exported) {
			t.Fatalf("the export's snapshot moved: %d persons, then %d", len(exported), len(again))
		}
		if err := exp.Close(); err != nil {
			t.Fatal(err)
		}
		for _, from := range []domain.ChangePosition{head, pos} {
			f := &feed{c: c.in(t), pos: from}
			if got := f.read(100); !slices.Equal(ids(got), []string{d.ID}) {
				t.Fatalf("from %+v: %v, want the one change after it", from, ids(got))
			}
		}
	})
}

func strp(s string) *string { return &s }

// testChangesUnderWriters: 16 writers change persons while a follower reads
// the feed all along; the follower never skips a change, so that at the
// end what it holds of each person equals an export.
func testChangesUnderWriters(t *testing.T, newStore NewStore) {
	c := newPersonCase(t, newStore(t))
	ctx := context.Background()
	tag := c.tag("t")
	const writers, persons, rounds = 16, 40, 12
	var wg sync.WaitGroup
	var failed sync.Once
	var ferr error
	for w := range writers {
		wg.Go(func() {
			for r := range rounds {
				ext := fmt.Sprintf("p%d", (w*7+r*3)%persons)
				name := setText(fmt.Sprintf("w%d-r%d", w, r))
				var err error
				switch r % 4 {
				case 0, 1:
					_, _, err = c.st.UpsertPerson(ctx, c.acc, domain.PersonUpsert{ExternalID: setText(ext), FirstName: name}, c.write())
				case 2:
					var p *domain.Person
					if p, _, err = c.st.UpsertPerson(ctx, c.acc, domain.PersonUpsert{ExternalID: setText(ext)}, c.write()); err == nil {
						_, err = c.st.AddPersonTags(ctx, c.acc, p.ID, []string{tag}, c.write())
					}
				case 3:
					other := fmt.Sprintf("q%d", (w+r)%persons)
					_, err = c.st.UpsertPersons(ctx, c.acc, []domain.PersonUpsert{
						{ExternalID: setText(ext), FirstName: name}, {ExternalID: setText(other), FirstName: name}}, c.write())
				}
				if err != nil {
					failed.Do(func() { ferr = err })
					return
				}
			}
		})
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	// The follower reads all along, and keeps what it last read of each;
	// a last read once every writer is done takes what is left.
	held := map[string]*domain.Person{}
	follower := &feed{c: c}
	for reading := true; reading; {
		select {
		case <-done:
			reading = false
		default:
		}
		for _, e := range follower.read(7) {
			held[e.PersonID] = e.Person
		}
	}
	if ferr != nil {
		t.Fatalf("a writer failed: %v", ferr)
	}
	exported, err := c.st.ExportPersons(ctx, c.acc, domain.PersonExport{}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(held) != len(exported) {
		t.Fatalf("the follower holds %d persons, the export %d", len(held), len(exported))
	}
	for _, p := range exported {
		h := held[p.ID]
		if h == nil || deref(h.FirstName) != deref(p.FirstName) || !slices.Equal(h.TagIDs, p.TagIDs) {
			var hn string
			var ht []string
			if h != nil {
				hn, ht = deref(h.FirstName), h.TagIDs
			}
			t.Fatalf("the follower holds %s as %q %v, the export as %q %v: it skipped a change",
				p.ID, hn, ht, deref(p.FirstName), p.TagIDs)
		}
	}
}
