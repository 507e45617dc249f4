package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

func set(v string) domain.Opt[string] { return domain.Opt[string]{Set: true, Value: v} }

func (c *personCase) merge(survivorID, fromID string) *domain.Person {
	c.t.Helper()
	p, err := c.st.MergePersons(context.Background(), c.acc, survivorID, fromID, c.write())
	if err != nil {
		c.t.Fatalf("merge %s into %s: %v", fromID, survivorID, err)
	}
	return p
}

// wantMerged fails unless err is the 404 of an id merged into survivorID.
func wantMerged(t *testing.T, what string, err error, survivorID string) {
	t.Helper()
	var me *domain.MergedError
	if !errors.As(err, &me) || me.MergedInto != survivorID || !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("%s: %v, want merged into %s", what, err, survivorID)
	}
}

func (c *personCase) aliases(personID string) []domain.PersonAlias {
	c.t.Helper()
	as, total, err := c.st.PersonAliases(context.Background(), c.acc, personID, domain.PageRequest{Page: 1, Size: 100})
	if err != nil || total != len(as) {
		c.t.Fatalf("aliases of %s: %+v of %d, %v", personID, as, total, err)
	}
	return as
}

func aliasText(as []domain.PersonAlias) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.Kind + "=" + a.Value + "<" + a.From
	}
	return out
}

func (c *personCase) counts() domain.AccountCounts {
	c.t.Helper()
	n, err := c.st.AccountCounts(context.Background(), c.acc)
	if err != nil {
		c.t.Fatal(err)
	}
	return n
}

func (c *personCase) crumbsOf(personID string) int {
	c.t.Helper()
	return c.crumbTotalOf(domain.BreadcrumbFilter{PersonID: &personID})
}

func testMergePersons(t *testing.T, newStore NewStore) {
	st := newStore(t)
	ctx := context.Background()

	t.Run("the survivor keeps its own, takes what it lacks and every record", func(t *testing.T) {
		c := newPersonCase(t, st)
		plan := c.field("Person", "plan", "str")
		c.field("Person", "team", "str")
		t1, t2 := c.tag("vip"), c.tag("newsletter")
		b, _ := c.upsert(domain.PersonUpsert{Email: set("Bea@Example.test"), ExternalID: set("ext-b"), FirstName: set("Bea"),
			LastName: set("Lovelace"), Phone: set("+44 20 7946 0000"),
			CustomFields: domain.Opt[map[string]json.RawMessage]{Set: true, Value: map[string]json.RawMessage{"plan": json.RawMessage(`"gold"`), "team": json.RawMessage(`"b"`)}}})
		c.advance(time.Minute)
		a, _ := c.upsert(domain.PersonUpsert{ExternalID: set("ext-a"), FirstName: set("Ada"),
			CustomFields: domain.Opt[map[string]json.RawMessage]{Set: true, Value: map[string]json.RawMessage{"team": json.RawMessage(`"a"`)}}})
		for _, add := range []struct {
			id   string
			tags []string
		}{{a.ID, []string{t1}}, {b.ID, []string{t1, t2}}} {
			if _, err := st.AddPersonTags(ctx, c.acc, add.id, add.tags, c.write()); err != nil {
				t.Fatal(err)
			}
		}
		keyed, _ := c.appendCrumb(domain.BreadcrumbInput{ID: "brc_merge_keyed", Flavor: "page_view", PersonID: &b.ID})
		c.appendCrumb(domain.BreadcrumbInput{Flavor: "page_view", Email: strp("bea@example.test")})
		c.appendCrumb(domain.BreadcrumbInput{Flavor: "email_view", PersonID: &a.ID})
		_ = plan
		c.advance(time.Minute)

		got := c.merge(a.ID, b.ID)
		if got.ID != a.ID || deref(got.ExternalID) != "ext-a" || deref(got.Email) != "bea@example.test" ||
			deref(got.FirstName) != "Ada" || deref(got.LastName) != "Lovelace" || deref(got.Phone) == "" {
			t.Fatalf("survivor %s ext %q email %q first %q last %q phone %q", got.ID, deref(got.ExternalID), deref(got.Email),
				deref(got.FirstName), deref(got.LastName), deref(got.Phone))
		}
		if !sameSet(got.TagIDs, []string{t1, t2}) {
			t.Fatalf("tags %v, want the union", got.TagIDs)
		}
		if got.CustomFields["plan"] != "gold" || got.CustomFields["team"] != "a" {
			t.Fatalf("custom fields %v: the survivor's values win, its missing ones are filled", got.CustomFields)
		}
		if !got.DateCreated.Equal(b.DateCreated) || !got.DateLastSeen.Equal(domain.FromMillis(c.now().UnixMilli())) {
			t.Fatalf("dates created %v last seen %v; want the earlier creation (%v) and the merge's time", got.DateCreated, got.DateLastSeen, b.DateCreated)
		}
		if n := c.crumbsOf(a.ID); n != 3 {
			t.Fatalf("the survivor holds %d breadcrumbs, want 3", n)
		}
		if n := c.crumbsOf(b.ID); n != 0 {
			t.Fatalf("the merged id still holds %d breadcrumbs", n)
		}
		replay, replayed := c.appendCrumb(domain.BreadcrumbInput{ID: "brc_merge_keyed", Flavor: "page_view", PersonID: &b.ID})
		if !replayed || replay.ID != keyed.ID || replay.PersonID != a.ID {
			t.Fatalf("a replayed key after the merge: %+v (replayed %v)", replay, replayed)
		}
		if as := aliasText(c.aliases(a.ID)); !slices.Equal(as, []string{"external_id=ext-b<" + b.ID}) {
			t.Fatalf("aliases %v", as)
		}
		_, err := st.GetPerson(ctx, c.acc, b.ID)
		wantMerged(t, "get the merged id", err, a.ID)
		if n := c.counts(); n.Persons != 1 || n.Breadcrumbs != 3 {
			t.Fatalf("counts %+v, want one person and three breadcrumbs", n)
		}
		if total, ids := c.windowTotal(); total != 1 || !slices.Equal(ids, []string{a.ID}) {
			t.Fatalf("window lists %v of %d", ids, total)
		}
		if total, ids := c.windowTotal(t2); total != 1 || !slices.Equal(ids, []string{a.ID}) {
			t.Fatalf("tag window lists %v of %d", ids, total)
		}
	})

	t.Run("every identifier resolves to the survivor", func(t *testing.T) {
		c := newPersonCase(t, st)
		a, _ := c.upsert(domain.PersonUpsert{Email: set("ada@example.test"), ExternalID: set("ext-a"), FID: set("f-a")})
		b, _ := c.upsert(domain.PersonUpsert{Email: set("bea@example.test"), ExternalID: set("ext-b"), FID: set("f-b")})
		c.merge(a.ID, b.ID)
		if as := aliasText(c.aliases(a.ID)); !slices.Equal(as, []string{"email=bea@example.test<" + b.ID,
			"external_id=ext-b<" + b.ID, "f_id=f-b<" + b.ID}) {
			t.Fatalf("aliases %v", as)
		}
		if rec, err := st.PersonRecord(ctx, c.acc, a.ID); err != nil || len(rec.Aliases) != 3 {
			t.Fatalf("the survivor's record carries %+v, %v; want its three aliases", rec, err)
		}
		for i, in := range []domain.PersonUpsert{
			{Email: set("BEA@example.test"), FirstName: set("Bea")},
			{ExternalID: set("ext-b"), LastName: set("Lovelace")},
			{FID: set("f-b"), Phone: set("+1 555 0100")},
		} {
			p, created := c.upsert(in)
			if created || p.ID != a.ID {
				t.Fatalf("upsert %d through an alias: %s (created %v), want %s", i, p.ID, created, a.ID)
			}
			if deref(p.Email) != "ada@example.test" || deref(p.ExternalID) != "ext-a" || deref(p.FID) != "f-a" {
				t.Fatalf("upsert %d changed the survivor's own identifiers: %+v", i, p)
			}
		}
		p := c.get(a.ID)
		if deref(p.FirstName) != "Bea" || deref(p.LastName) != "Lovelace" || deref(p.Phone) == "" {
			t.Fatalf("the upserts' other attributes did not apply: %+v", p)
		}
		for _, in := range []domain.BreadcrumbInput{
			{Flavor: "page_view", Email: strp("bea@example.test")},
			{Flavor: "page_view", ExternalID: strp("ext-b")},
			{Flavor: "page_view", FID: strp("f-b")},
			{Flavor: "page_view", PersonID: &b.ID},
			{Flavor: "page_view", Email: strp("bea@example.test"), ExternalID: strp("ext-b")},
		} {
			if bc, _ := c.appendCrumb(in); bc.PersonID != a.ID {
				t.Fatalf("breadcrumb %+v went to %s, want %s", in, bc.PersonID, a.ID)
			}
		}
		for _, sel := range []domain.PersonSelection{{Mode: domain.PersonByEmail, Key: "Bea@Example.test"}, {Mode: domain.PersonByExternalID, Key: "ext-b"}} {
			ps, total, err := st.ListPersons(ctx, c.acc, sel, domain.PageRequest{Page: 1, Size: 10})
			if err != nil || total != 1 || len(ps) != 1 || ps[0].ID != a.ID || deref(ps[0].Email) != "ada@example.test" {
				t.Fatalf("lookup %+v: %+v of %d, %v", sel, ps, total, err)
			}
		}
		results := c.upsertBatch(domain.PersonUpsert{ExternalID: set("ext-b")}, domain.PersonUpsert{Email: set("bea@example.test")})
		for i, r := range results {
			if r.Err != nil || r.Person == nil || r.Person.ID != a.ID || r.Created {
				t.Fatalf("batch item %d: %+v", i, r)
			}
		}
		// Another person cannot take an alias: it is the survivor's.
		other, _ := c.upsert(domain.PersonUpsert{ExternalID: set("ext-c")})
		_, _, err := st.UpsertPerson(ctx, c.acc, domain.PersonUpsert{ExternalID: set("ext-c"), Email: set("bea@example.test")}, c.write())
		var ce *domain.ConflictError
		if !errors.As(err, &ce) || ce.ExistingID != a.ID {
			t.Fatalf("another person taking an alias: %v, want a conflict naming %s", err, a.ID)
		}
		_, err = st.UpdatePerson(ctx, c.acc, other.ID, domain.PersonUpdate{Email: set("bea@example.test")}, c.write())
		if !errors.As(err, &ce) || ce.ExistingID != a.ID {
			t.Fatalf("another person patched to an alias: %v, want a conflict naming %s", err, a.ID)
		}
		if n := c.counts(); n.Persons != 2 {
			t.Fatalf("%d persons, want the survivor and the other", n.Persons)
		}
	})

	t.Run("the merged id answers merged; refusals", func(t *testing.T) {
		c := newPersonCase(t, st)
		tag := c.tag("vip")
		a, _ := c.upsert(domain.PersonUpsert{Email: set("ada@example.test")})
		b, _ := c.upsert(domain.PersonUpsert{Email: set("bea@example.test")})
		x, _ := c.upsert(domain.PersonUpsert{Email: set("x@example.test")})
		c.merge(a.ID, b.ID)
		_, err := st.UpdatePerson(ctx, c.acc, b.ID, domain.PersonUpdate{FirstName: set("Bea")}, c.write())
		wantMerged(t, "update", err, a.ID)
		_, err = st.AddPersonTags(ctx, c.acc, b.ID, []string{tag}, c.write())
		wantMerged(t, "add tags", err, a.ID)
		wantMerged(t, "remove a tag", st.RemovePersonTag(ctx, c.acc, b.ID, tag, c.write()), a.ID)
		_, err = st.ErasePerson(ctx, c.acc, b.ID, domain.EraseRequest{KeyID: "key_x"}, c.write())
		wantMerged(t, "erase", err, a.ID)
		_, _, err = st.PersonAliases(ctx, c.acc, b.ID, domain.PageRequest{Page: 1, Size: 10})
		wantMerged(t, "aliases", err, a.ID)
		_, err = st.MergePersons(ctx, c.acc, b.ID, x.ID, c.write())
		wantMerged(t, "merge into a merged id", err, a.ID)
		_, err = st.MergePersons(ctx, c.acc, x.ID, b.ID, c.write())
		wantMerged(t, "merge a merged id elsewhere", err, a.ID)

		again := c.merge(a.ID, b.ID)
		if again.ID != a.ID {
			t.Fatalf("merging again answered %s", again.ID)
		}
		var ve *domain.ValidationError
		if _, err := st.MergePersons(ctx, c.acc, a.ID, a.ID, c.write()); !errors.As(err, &ve) || ve.Errors[0].Pointer != "/from" {
			t.Fatalf("merging a person into itself: %v", err)
		}
		foreign, _ := c.other().upsert(domain.PersonUpsert{Email: set("f@example.test")})
		for _, ids := range [][2]string{{a.ID, "per_nobody"}, {"per_nobody", a.ID}, {a.ID, foreign.ID}, {foreign.ID, a.ID}} {
			_, err := st.MergePersons(ctx, c.acc, ids[0], ids[1], c.write())
			var me *domain.MergedError
			if !errors.Is(err, domain.ErrNotFound) || errors.As(err, &me) {
				t.Fatalf("merge %v: %v, want a plain not found", ids, err)
			}
		}
	})

	t.Run("chains resolve to the current survivor", func(t *testing.T) {
		c := newPersonCase(t, st)
		f := &feed{c: c}
		a, _ := c.upsert(domain.PersonUpsert{Email: set("a@example.test")})
		cc, _ := c.upsert(domain.PersonUpsert{Email: set("c@example.test")})
		d, _ := c.upsert(domain.PersonUpsert{Email: set("d@example.test")})
		f.read(100)
		c.merge(cc.ID, d.ID)
		c.advance(time.Second)
		c.merge(a.ID, cc.ID)
		for _, id := range []string{cc.ID, d.ID} {
			_, err := st.GetPerson(ctx, c.acc, id)
			wantMerged(t, "get "+id, err, a.ID)
		}
		if as := aliasText(c.aliases(a.ID)); !slices.Equal(as, []string{"email=d@example.test<" + d.ID, "email=c@example.test<" + cc.ID}) {
			t.Fatalf("aliases %v", as)
		}
		if p, _ := c.upsert(domain.PersonUpsert{Email: set("d@example.test")}); p.ID != a.ID {
			t.Fatalf("the first alias of the chain found %s", p.ID)
		}
		entries := f.read(100)
		var tombs []string
		for _, e := range entries {
			if e.Deleted != nil {
				if e.Deleted.MergedInto == nil || *e.Deleted.MergedInto != a.ID {
					t.Fatalf("tombstone of %s merged into %v, want %s", e.PersonID, e.Deleted.MergedInto, a.ID)
				}
				tombs = append(tombs, e.PersonID)
			}
		}
		if !sameSet(tombs, []string{cc.ID, d.ID}) || entries[len(entries)-1].PersonID != a.ID {
			t.Fatalf("feed after the merges: %v", ids(entries))
		}
	})

	t.Run("events: a folded burst, one person.merged, the feed", func(t *testing.T) {
		c := newPersonCase(t, st)
		told := newWebhook(t, st, c.acc, domain.EventPersonUpdated, domain.EventPersonMerged)
		untold := newWebhook(t, st, c.acc, domain.EventPersonUpdated, domain.EventPersonCreated)
		a, _ := c.upsert(domain.PersonUpsert{Email: set("a@example.test")})
		b, _ := c.upsert(domain.PersonUpsert{Email: set("b@example.test")})
		f := &feed{c: c}
		f.read(100)
		c.advance(time.Minute)
		c.merge(a.ID, b.ID)
		if _, err := st.PendingBurst(ctx, c.acc, b.ID); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("the merged person's burst: %v, want none", err)
		}
		if sb := c.burst(a.ID); sb == nil || sb.Event != domain.EventPersonCreated {
			t.Fatalf("the survivor's burst %+v, want its creation burst still open", sb)
		}
		for _, w := range []domain.Webhook{told, untold} {
			ds, _, err := st.ListDeliveries(ctx, c.acc, w.ID, domain.DeliveryFilter{Event: domain.EventPersonMerged}, domain.PageRequest{Page: 1, Size: 50})
			if err != nil {
				t.Fatal(err)
			}
			want := 0
			if w.ID == told.ID {
				want = 1
			}
			if len(ds) != want {
				t.Fatalf("%s: %d person.merged deliveries, want %d", w.ID, len(ds), want)
			}
			if want == 1 {
				d, _, err := st.GetDelivery(ctx, c.acc, w.ID, ds[0].ID)
				if err != nil {
					t.Fatal(err)
				}
				at := c.now().Format("2006-01-02T15:04:05.000Z")
				body := fmt.Sprintf(`{"id":"%s","event":"person.merged","created":"%s","data":{"id":"%s","merged_into":"%s","date_merged":"%s"}}`,
					d.ID, at, b.ID, a.ID, at)
				if string(d.Body) != body || d.PersonID != b.ID || d.Status != domain.DeliveryPending {
					t.Fatalf("delivery %+v body %s\nwant %s", d, d.Body, body)
				}
			}
		}
		c.merge(a.ID, b.ID)
		ds, _, _ := st.ListDeliveries(ctx, c.acc, told.ID, domain.DeliveryFilter{Event: domain.EventPersonMerged}, domain.PageRequest{Page: 1, Size: 50})
		if len(ds) != 1 {
			t.Fatalf("merging again made %d person.merged deliveries, want the one", len(ds))
		}
		got := f.read(100)
		if len(got) != 2 || got[0].PersonID != b.ID || got[0].Deleted == nil || got[0].Deleted.MergedInto == nil ||
			*got[0].Deleted.MergedInto != a.ID || got[1].PersonID != a.ID || got[1].Person == nil {
			t.Fatalf("feed after the merge: %v", ids(got))
		}
	})

	t.Run("erasing the survivor erases its aliases", func(t *testing.T) {
		c := newPersonCase(t, st)
		a, _ := c.upsert(domain.PersonUpsert{Email: set("a@example.test")})
		b, _ := c.upsert(domain.PersonUpsert{Email: set("b@example.test"), ExternalID: set("ext-b")})
		c.appendCrumb(domain.BreadcrumbInput{Flavor: "page_view", PersonID: &b.ID})
		c.merge(a.ID, b.ID)
		c.erase(a.ID, true)
		if _, err := st.GetPerson(ctx, c.acc, b.ID); !errors.Is(err, domain.ErrNotFound) || errors.As(err, new(*domain.MergedError)) {
			t.Fatalf("the merged id after the survivor's erasure: %v, want a plain not found", err)
		}
		for _, in := range []domain.PersonUpsert{{Email: set("b@example.test")}, {ExternalID: set("ext-b")}, {Email: set("a@example.test")}} {
			_, _, err := st.UpsertPerson(ctx, c.acc, in, c.write())
			var se *domain.SuppressedError
			if !errors.As(err, &se) {
				t.Fatalf("upsert %+v after the erasure: %v, want suppressed", in, err)
			}
		}
		if n := c.counts(); n.Persons != 0 || n.Breadcrumbs != 0 {
			t.Fatalf("counts %+v after the erasure", n)
		}
		// Without suppression the aliases are free again: a new person.
		c2 := newPersonCase(t, st)
		a2, _ := c2.upsert(domain.PersonUpsert{Email: set("a@example.test")})
		b2, _ := c2.upsert(domain.PersonUpsert{Email: set("b@example.test")})
		c2.merge(a2.ID, b2.ID)
		c2.erase(a2.ID, false)
		if p, created := c2.upsert(domain.PersonUpsert{Email: set("b@example.test")}); !created || p.ID == a2.ID || p.ID == b2.ID {
			t.Fatalf("the erased alias found %s (created %v)", p.ID, created)
		}
	})

	t.Run("a merge never bypasses a suppression", func(t *testing.T) {
		c := newPersonCase(t, st)
		gone, _ := c.upsert(domain.PersonUpsert{Email: set("gone@example.test")})
		c.erase(gone.ID, true)
		a, _ := c.upsert(domain.PersonUpsert{Email: set("a@example.test")})
		b, _ := c.upsert(domain.PersonUpsert{ExternalID: set("ext-b")})
		c.merge(a.ID, b.ID)
		_, _, err := st.UpsertPerson(ctx, c.acc, domain.PersonUpsert{ExternalID: set("ext-b"), Email: set("gone@example.test")}, c.write())
		if !errors.As(err, new(*domain.SuppressedError)) {
			t.Fatalf("a suppressed email through a merged identifier: %v", err)
		}
	})

	t.Run("16 writers naming both persons during the merge", func(t *testing.T) {
		c := newPersonCase(t, st)
		a, _ := c.upsert(domain.PersonUpsert{Email: set("a@example.test"), ExternalID: set("ext-a")})
		b, _ := c.upsert(domain.PersonUpsert{Email: set("b@example.test"), ExternalID: set("ext-b")})
		const writers, each = 16, 12
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			fails []error
			start = make(chan struct{})
		)
		w := c.write()
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for j := range each {
					var err error
					email, ext := "a@example.test", "ext-a"
					if (i+j)%2 == 1 {
						email, ext = "b@example.test", "ext-b"
					}
					switch j % 4 {
					case 0:
						_, _, err = st.UpsertPerson(ctx, c.acc, domain.PersonUpsert{Email: set(email), FirstName: set(fmt.Sprintf("w%d", i))}, w)
					case 1:
						_, _, err = st.UpsertPerson(ctx, c.acc, domain.PersonUpsert{ExternalID: set(ext), LastName: set(fmt.Sprintf("w%d", j))}, w)
					case 2:
						_, _, err = st.AppendBreadcrumb(ctx, c.acc, domain.BreadcrumbInput{Flavor: "page_view", Email: &email}, w)
					default:
						_, _, err = st.AppendBreadcrumb(ctx, c.acc, domain.BreadcrumbInput{Flavor: "page_view", ExternalID: &ext}, w)
					}
					if err != nil {
						mu.Lock()
						fails = append(fails, err)
						mu.Unlock()
					}
				}
			}()
		}
		close(start)
		if _, err := st.MergePersons(ctx, c.acc, a.ID, b.ID, w); err != nil {
			t.Fatalf("merge under writers: %v", err)
		}
		wg.Wait()
		if len(fails) > 0 {
			t.Fatalf("%d writes failed, the first: %v", len(fails), fails[0])
		}
		if n := c.counts(); n.Persons != 1 || n.Breadcrumbs != writers*each/2 {
			t.Fatalf("counts %+v, want one person and %d breadcrumbs", n, writers*each/2)
		}
		if n := c.crumbsOf(a.ID); n != writers*each/2 {
			t.Fatalf("the survivor holds %d breadcrumbs of %d", n, writers*each/2)
		}
		ps, _, err := st.ListPersons(ctx, c.acc, domain.PersonSelection{Mode: domain.PersonByEmail, Key: "b@example.test"}, domain.PageRequest{Page: 1, Size: 10})
		if err != nil || len(ps) != 1 || ps[0].ID != a.ID {
			t.Fatalf("the merged email finds %+v, %v", ps, err)
		}
	})
	mergeExportCases(t, st)
	mergeChainFeedCases(t, st)
}
