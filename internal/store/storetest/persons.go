package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/pds-dev/pds/internal/domain"
)

func testPersons(t *testing.T, newStore NewStore) {
	ctx := context.Background()

	t.Run("upsert creates, then matches by external_id, email in any case, f_id", func(t *testing.T) {
		t.Parallel()
		c := newPersonCase(t, newStore(t))
		// Identifiers are kept in their normal form (domain.NormalIdentifier).
		p, created := c.upsert(domain.PersonUpsert{ExternalID: setText("crm-1"),
			Email: setText("Ada@Example.com"), FirstName: setText("Ada")})
		if !created || p.UpsertResult != domain.UpsertCreated || !p.DateCreated.Equal(Epoch) || !p.DateLastSeen.Equal(Epoch) ||
			textOf(p.ExternalID) != "crm-1" || textOf(p.Email) != "ada@example.com" || textOf(p.FirstName) != "Ada" ||
			p.LastName != nil || p.FID != nil || len(p.TagIDs) != 0 || len(p.CustomFields) != 0 {
			t.Fatalf("created %v: %+v", created, p)
		}
		c.wantBurst(p.ID, domain.EventPersonCreated, Epoch, Epoch)

		c.advance(time.Minute)
		byExt, created := c.upsert(domain.PersonUpsert{ExternalID: setText("crm-1"), LastName: setText("Lovelace")})
		if created || byExt.ID != p.ID || textOf(byExt.FirstName) != "Ada" || textOf(byExt.LastName) != "Lovelace" ||
			byExt.UpsertResult != domain.UpsertUpdated || !byExt.DateLastSeen.Equal(c.now()) || !byExt.DateCreated.Equal(Epoch) {
			t.Fatalf("match by external_id: created %v %+v", created, byExt)
		}
		// The burst began with the creation: it stays person.created.
		c.wantBurst(p.ID, domain.EventPersonCreated, Epoch, c.now())

		byEmail, created := c.upsert(domain.PersonUpsert{Email: setText("ADA@example.COM")})
		if created || byEmail.ID != p.ID || textOf(byEmail.Email) != "ada@example.com" {
			t.Fatalf("match by email in another case: created %v %+v", created, byEmail)
		}
		c.upsert(domain.PersonUpsert{ExternalID: setText("crm-1"), FID: setText("f-1")})
		byFID, created := c.upsert(domain.PersonUpsert{FID: setText("f-1"), Phone: setText("+351")})
		if created || byFID.ID != p.ID || textOf(byFID.Phone) != "+351" || textOf(byFID.FID) != "f-1" {
			t.Fatalf("match by f_id: created %v %+v", created, byFID)
		}

		other := c.other()
		foreign, created := other.upsert(domain.PersonUpsert{ExternalID: setText("crm-1")})
		if !created || foreign.ID == p.ID {
			t.Fatal("another account's upsert matched this account's person")
		}
		if _, err := other.st.GetPerson(ctx, other.acc, p.ID); !isErr[*domain.NotFoundError](err) {
			t.Fatalf("another account reads the person: %v", err)
		}
	})

	t.Run("match order: external_id, then email, then f_id; a held identifier conflicts", func(t *testing.T) {
		t.Parallel()
		c := newPersonCase(t, newStore(t))
		a, _ := c.upsert(domain.PersonUpsert{ExternalID: setText("a")})
		b, _ := c.upsert(domain.PersonUpsert{Email: setText("b@x.test")})
		f, _ := c.upsert(domain.PersonUpsert{FID: setText("f")})
		c.advance(time.Minute)
		for _, tc := range []struct {
			in       domain.PersonUpsert
			existing string
		}{
			// The first identifier decides the match; the other one belongs to
			// someone else, so applying it conflicts and names that person.
			{domain.PersonUpsert{ExternalID: setText("a"), Email: setText("B@x.test")}, b.ID},
			{domain.PersonUpsert{ExternalID: setText("a"), FID: setText("f")}, f.ID},
			{domain.PersonUpsert{FID: setText("f"), Email: setText("b@x.test")}, f.ID},
		} {
			_, _, err := c.st.UpsertPerson(ctx, c.acc, tc.in, c.write())
			wantPersonConflict(t, err, tc.existing)
		}
		for _, p := range []*domainPerson{a, b, f} {
			if got := c.get(p.ID); !got.DateLastSeen.Equal(Epoch) || got.UpsertResult != domain.UpsertCreated {
				t.Fatalf("a refused upsert changed %s: %+v", p.ID, got)
			}
		}
		// An unmatched external_id falls through to the email match and is applied.
		got, created := c.upsert(domain.PersonUpsert{ExternalID: setText("b-ext"), Email: setText("b@x.test")})
		if created || got.ID != b.ID || textOf(got.ExternalID) != "b-ext" {
			t.Fatalf("fallback to email: created %v %+v", created, got)
		}
		got, created = c.upsert(domain.PersonUpsert{ExternalID: setText("f-ext"), FID: setText("f")})
		if created || got.ID != f.ID || textOf(got.ExternalID) != "f-ext" {
			t.Fatalf("fallback to f_id: created %v %+v", created, got)
		}
	})

	t.Run("absent keeps, null clears; an upsert that changes nothing records nothing", func(t *testing.T) {
		t.Parallel()
		c := newPersonCase(t, newStore(t))
		p, _ := c.upsert(domain.PersonUpsert{ExternalID: setText("x"), FID: setText("fx"),
			Email: setText("x@x.test"), FirstName: setText("X"), Phone: setText("1")})
		c.advance(time.Minute)
		got, _ := c.upsert(domain.PersonUpsert{ExternalID: setText("x"), FID: nullText(),
			Phone: nullText(), Email: nullText()})
		if got.Phone != nil || got.Email != nil || got.FID != nil || textOf(got.FirstName) != "X" || textOf(got.ExternalID) != "x" {
			t.Fatalf("after clearing: %+v", got)
		}
		// The cleared email is free for another person.
		if q, created := c.upsert(domain.PersonUpsert{Email: setText("x@x.test")}); !created || q.ID == p.ID {
			t.Fatal("a cleared email still matched its former holder")
		}
		changedAt := c.now()
		c.advance(10 * time.Minute)
		same, created := c.upsert(domain.PersonUpsert{ExternalID: setText("x"), FirstName: setText("X")})
		if created || same.UpsertResult != domain.UpsertUnchanged || !same.DateLastSeen.Equal(changedAt) {
			t.Fatalf("no-op upsert: created %v %+v", created, same)
		}
		c.wantBurst(p.ID, domain.EventPersonCreated, Epoch, changedAt)
	})

	t.Run("update: absent keeps, null clears, email conflicts, unknown and foreign ids are not found", func(t *testing.T) {
		t.Parallel()
		c := newPersonCase(t, newStore(t))
		p, _ := c.upsert(domain.PersonUpsert{ExternalID: setText("u"), FirstName: setText("U"), Phone: setText("9")})
		holder, _ := c.upsert(domain.PersonUpsert{Email: setText("taken@x.test")})
		c.advance(time.Minute)
		got, err := c.st.UpdatePerson(ctx, c.acc, p.ID, domain.PersonUpdate{LastName: setText("V"), Phone: nullText()}, c.write())
		if err != nil || textOf(got.FirstName) != "U" || textOf(got.LastName) != "V" || got.Phone != nil ||
			got.UpsertResult != domain.UpsertUpdated || !got.DateLastSeen.Equal(c.now()) {
			t.Fatalf("update: %+v, %v", got, err)
		}
		c.wantBurst(p.ID, domain.EventPersonCreated, Epoch, c.now())
		changedAt := c.now()

		c.advance(time.Minute)
		same, err := c.st.UpdatePerson(ctx, c.acc, p.ID, domain.PersonUpdate{LastName: setText("V"), FirstName: setText("U")}, c.write())
		if err != nil || !same.DateLastSeen.Equal(changedAt) || same.UpsertResult != domain.UpsertUpdated {
			t.Fatalf("update with identical values: %+v, %v", same, err)
		}
		c.wantBurst(p.ID, domain.EventPersonCreated, Epoch, changedAt)

		_, err = c.st.UpdatePerson(ctx, c.acc, p.ID, domain.PersonUpdate{Email: setText("TAKEN@x.test")}, c.write())
		wantPersonConflict(t, err, holder.ID)
		if _, err := c.st.UpdatePerson(ctx, c.acc, holder.ID, domain.PersonUpdate{Email: setText("Taken@x.test")}, c.write()); err != nil {
			t.Fatalf("re-casing one's own email: %v", err)
		}
		if _, err := c.st.UpdatePerson(ctx, c.acc, "per_missing", domain.PersonUpdate{}, c.write()); !isErr[*domain.NotFoundError](err) {
			t.Fatalf("update of an unknown person: %v", err)
		}
		other := c.other()
		if _, err := other.st.UpdatePerson(ctx, other.acc, p.ID, domain.PersonUpdate{FirstName: setText("hijack")}, other.write()); !isErr[*domain.NotFoundError](err) {
			t.Fatalf("update of another account's person: %v", err)
		}
		if textOf(c.get(p.ID).FirstName) != "U" {
			t.Fatal("another account changed the person")
		}
	})

	t.Run("later changes slide the burst and keep the event it opened with", func(t *testing.T) {
		t.Parallel()
		c := newPersonCase(t, newStore(t))
		p, _ := c.upsert(domain.PersonUpsert{ExternalID: setText("b")})
		q, _ := c.other().upsert(domain.PersonUpsert{ExternalID: setText("b")})
		if c.burst(q.ID) != nil {
			t.Fatal("another account's person shows in this account's outbox")
		}
		for _, name := range []string{"B", "C"} {
			c.advance(4 * time.Minute)
			if _, err := c.st.UpdatePerson(ctx, c.acc, p.ID, domain.PersonUpdate{FirstName: setText(name)}, c.write()); err != nil {
				t.Fatal(err)
			}
			c.wantBurst(p.ID, domain.EventPersonCreated, Epoch, c.now())
		}
	})

	t.Run("concurrent patches of different attributes all land", func(t *testing.T) {
		t.Parallel()
		c := newPersonCase(t, newStore(t))
		p, _ := c.upsert(domain.PersonUpsert{ExternalID: setText("busy")})
		patches := []func(v string) domain.PersonUpdate{
			func(v string) domain.PersonUpdate { return domain.PersonUpdate{FirstName: setText(v)} },
			func(v string) domain.PersonUpdate { return domain.PersonUpdate{LastName: setText(v)} },
			func(v string) domain.PersonUpdate { return domain.PersonUpdate{Phone: setText(v)} },
			func(v string) domain.PersonUpdate { return domain.PersonUpdate{Email: setText(v + "@x.test")} },
		}
		const rounds = 10
		var wg sync.WaitGroup
		errs := make([]error, len(patches))
		for i, patch := range patches {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for r := range rounds {
					if _, err := c.st.UpdatePerson(ctx, c.acc, p.ID, patch(fmt.Sprintf("v%d", r)), c.write()); err != nil {
						errs[i] = err
						return
					}
				}
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		last := fmt.Sprintf("v%d", rounds-1)
		got := c.get(p.ID)
		if textOf(got.FirstName) != last || textOf(got.LastName) != last || textOf(got.Phone) != last || textOf(got.Email) != last+"@x.test" {
			t.Fatalf("a concurrent patch was lost: %s %s %s %s", textOf(got.FirstName), textOf(got.LastName), textOf(got.Phone), textOf(got.Email))
		}
	})

	t.Run("concurrent upserts of one external_id make one person", func(t *testing.T) {
		t.Parallel()
		c := newPersonCase(t, newStore(t))
		const n = 8
		var wg sync.WaitGroup
		ids := make([]string, n)
		created := make([]bool, n)
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var p *domainPerson
				p, created[i], errs[i] = c.st.UpsertPerson(ctx, c.acc, domain.PersonUpsert{ExternalID: setText("race")}, c.write())
				if p != nil {
					ids[i] = p.ID
				}
			}()
		}
		wg.Wait()
		made := 0
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("upsert %d: %v", i, errs[i])
			}
			if ids[i] != ids[0] {
				t.Fatalf("two persons for one external_id: %s and %s", ids[0], ids[i])
			}
			if created[i] {
				made++
			}
		}
		if made != 1 {
			t.Fatalf("%d upserts report creating the person, want 1", made)
		}
	})
}

type domainPerson = domain.Person

// wantPersonConflict fails unless err is a 409 naming existingID.
func wantPersonConflict(t *testing.T, err error, existingID string) {
	t.Helper()
	ce, ok := err.(*domain.ConflictError)
	if !ok || ce.ExistingID != existingID {
		t.Fatalf("got %v, want a conflict naming %s", err, existingID)
	}
}

func testPersonCustomFields(t *testing.T, newStore NewStore) {
	ctx := context.Background()
	c := newPersonCase(t, newStore(t))
	for _, f := range []struct{ key, dataType string }{
		{"n", "int"}, {"ratio", "float"}, {"price", "money"}, {"ok", "bool"}, {"colors", "list"},
		{"born", "date"}, {"nick", "str"}, {"bio", "unicode"},
	} {
		c.field("Person", f.key, f.dataType)
		c.advance(time.Millisecond)
	}
	gone := c.field("Person", "gone", "str")
	c.field("Breadcrumb", "crumb_only", "str")
	p, _ := c.upsert(domain.PersonUpsert{ExternalID: setText("cf")})

	t.Run("a created person is answered exactly as a read finds it", func(t *testing.T) {
		c := c.in(t)
		in := domain.PersonUpsert{ExternalID: setText("cf-made"), Email: setText("Made@Example.com"), FID: setText("f-made"),
			FirstName: setText("Ma"), LastName: setText("De"), Phone: setText("+1"),
			CustomFields: fieldValues(map[string]any{"n": 5, "colors": []string{"red"}, "born": "2026-11-21T12:00:00+02:00", "nick": nil})}
		made, created := c.upsert(in)
		read, err := c.st.GetPerson(ctx, c.acc, made.ID)
		if err != nil || !created {
			t.Fatalf("created %v, read: %v", created, err)
		}
		if diff := cmp.Diff(made, read); diff != "" {
			t.Fatalf("the upsert's answer and a read differ (-answer +read):\n%s", diff)
		}
	})

	t.Run("values are checked by data_type and stored as strings", func(t *testing.T) {
		c := c.in(t)
		for _, tc := range []struct {
			key  string
			in   any
			want string
		}{
			{"n", 5, "5"}, {"n", "-7", "-7"}, {"ratio", 1.5, "1.5"}, {"ratio", "2e3", "2e3"},
			{"price", "19.90", "19.90"}, {"price", 3, "3"}, {"ok", true, "true"}, {"ok", "false", "false"},
			{"colors", []string{"red", "blue"}, `["red","blue"]`}, {"colors", []string{}, `[]`},
			{"born", "2026-11-21", "2026-11-21"}, {"born", "2026-11-21T12:00:00+02:00", "2026-11-21T10:00:00.000Z"},
			{"nick", "", ""}, {"bio", "Zoë ✓", "Zoë ✓"},
		} {
			got, err := c.st.UpdatePerson(ctx, c.acc, p.ID, domain.PersonUpdate{CustomFields: fieldValues(map[string]any{tc.key: tc.in})}, c.write())
			if err != nil || got.CustomFields[tc.key] != tc.want {
				t.Fatalf("%s = %#v: stored %q, %v; want %q", tc.key, tc.in, got.CustomFields[tc.key], err, tc.want)
			}
		}
	})

	t.Run("a value that does not fit, an unknown, archived or non-Person key is refused by key", func(t *testing.T) {
		c := c.in(t)
		if err := c.st.ArchiveCustomField(ctx, c.acc, gone.ID, c.now()); err != nil {
			t.Fatal(err)
		}
		before := c.get(p.ID)
		for _, tc := range []struct {
			key string
			in  any
		}{
			{"n", 1.5}, {"n", "abc"}, {"n", "99999999999999999999"}, {"n", true}, {"ratio", "x"}, {"ratio", "NaN"},
			{"price", []string{"1"}}, {"ok", "yes"}, {"ok", 1}, {"colors", "red"}, {"colors", []any{1}},
			{"born", "tomorrow"}, {"born", 20261121}, {"nick", 5}, {"bio", false},
			{"unknown", "x"}, {"gone", "x"}, {"crumb_only", "x"},
		} {
			_, err := c.st.UpdatePerson(ctx, c.acc, p.ID, domain.PersonUpdate{CustomFields: fieldValues(map[string]any{tc.key: tc.in})}, c.write())
			ve, ok := err.(*domain.ValidationError)
			if !ok || len(ve.Errors) != 1 || ve.Errors[0].Pointer != "/custom_fields/"+tc.key {
				t.Fatalf("%s = %#v: %v, want a 400 at /custom_fields/%s", tc.key, tc.in, err, tc.key)
			}
		}
		_, err := c.st.UpdatePerson(ctx, c.acc, p.ID, domain.PersonUpdate{FirstName: setText("changed"),
			CustomFields: fieldValues(map[string]any{"n": "x", "ok": "x", "nick": "fine"})}, c.write())
		if ve, ok := err.(*domain.ValidationError); !ok || len(ve.Errors) != 2 ||
			ve.Errors[0].Pointer != "/custom_fields/n" || ve.Errors[1].Pointer != "/custom_fields/ok" {
			t.Fatalf("two bad values: %v", err)
		}
		after := c.get(p.ID)
		if after.FirstName != nil || !after.DateLastSeen.Equal(before.DateLastSeen) || after.CustomFields["nick"] != before.CustomFields["nick"] {
			t.Fatalf("a refused write changed the person: %+v", after)
		}
	})

	t.Run("merge by key, null removes a key, null object removes all, equal values change nothing", func(t *testing.T) {
		c := c.in(t)
		c.advance(time.Minute)
		got, err := c.st.UpdatePerson(ctx, c.acc, p.ID, domain.PersonUpdate{CustomFields: fieldValues(map[string]any{"n": nil, "nick": "z"})}, c.write())
		if _, held := got.CustomFields["n"]; err != nil || held || got.CustomFields["nick"] != "z" || got.CustomFields["ok"] != "false" {
			t.Fatalf("merge: %v, %v", got.CustomFields, err)
		}
		changedAt := c.now()
		c.advance(time.Minute)
		same, err := c.st.UpdatePerson(ctx, c.acc, p.ID, domain.PersonUpdate{CustomFields: fieldValues(map[string]any{"nick": "z", "n": nil})}, c.write())
		if err != nil || !same.DateLastSeen.Equal(changedAt) {
			t.Fatalf("rewriting equal values moved date_last_seen: %+v, %v", same, err)
		}
		c.wantBurst(p.ID, domain.EventPersonCreated, p.DateCreated, changedAt)
		cleared, err := c.st.UpdatePerson(ctx, c.acc, p.ID, domain.PersonUpdate{CustomFields: domain.Opt[map[string]json.RawMessage]{Set: true, Null: true}}, c.write())
		if err != nil || len(cleared.CustomFields) != 0 || !cleared.DateLastSeen.Equal(c.now()) {
			t.Fatalf("null custom_fields: %v, %v", cleared.CustomFields, err)
		}
	})

	t.Run("values of an archived field are hidden; Person fields list only live Person fields", func(t *testing.T) {
		c := c.in(t)
		q, _ := c.upsert(domain.PersonUpsert{ExternalID: setText("hidden"),
			CustomFields: fieldValues(map[string]any{"bio": "kept"})})
		bio := c.field("Person", "bio2", "str")
		if _, err := c.st.UpdatePerson(ctx, c.acc, q.ID, domain.PersonUpdate{CustomFields: fieldValues(map[string]any{"bio2": "x"})}, c.write()); err != nil {
			t.Fatal(err)
		}
		if err := c.st.ArchiveCustomField(ctx, c.acc, bio.ID, c.now()); err != nil {
			t.Fatal(err)
		}
		got := c.get(q.ID)
		if _, shown := got.CustomFields["bio2"]; shown || got.CustomFields["bio"] != "kept" {
			t.Fatalf("archived field's value shown: %v", got.CustomFields)
		}
		fields, err := c.st.ListPersonFields(ctx, c.acc)
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, f := range fields {
			keys = append(keys, f.Key)
		}
		if !slices.Equal(keys, []string{"n", "ratio", "price", "ok", "colors", "born", "nick", "bio"}) {
			t.Fatalf("person fields %v", keys)
		}
		if other, err := c.st.ListPersonFields(ctx, c.other().acc); err != nil || len(other) != 0 {
			t.Fatalf("another account lists %d fields, err %v", len(other), err)
		}
	})
}

func testPersonTags(t *testing.T, newStore NewStore) {
	ctx := context.Background()
	c := newPersonCase(t, newStore(t))
	t1, t2, t3 := c.tag("one"), c.tag("two"), c.tag("three")
	archived := c.tag("archived")
	if err := c.st.ArchiveTag(ctx, c.acc, archived, c.now()); err != nil {
		t.Fatal(err)
	}
	other := c.other()
	foreign := other.tag("foreign")
	p, _ := c.upsert(domain.PersonUpsert{ExternalID: setText("tagged")})

	c.advance(time.Minute)
	got, err := c.st.AddPersonTags(ctx, c.acc, p.ID, []string{t2, t1, t2}, c.write())
	if err != nil || !slices.Equal(got.TagIDs, []string{t1, t2}) && !slices.Equal(got.TagIDs, []string{t2, t1}) ||
		len(got.TagNames) != 2 || !got.DateLastSeen.Equal(c.now()) || got.UpsertResult != domain.UpsertUpdated {
		t.Fatalf("add tags: %+v, %v", got, err)
	}
	for i, id := range got.TagIDs {
		if want := map[string]string{t1: "one", t2: "two"}[id]; got.TagNames[i] != want {
			t.Fatalf("tag names %v do not follow tag ids %v", got.TagNames, got.TagIDs)
		}
	}
	attachedAt := c.now()

	c.advance(time.Minute)
	again, err := c.st.AddPersonTags(ctx, c.acc, p.ID, []string{t1}, c.write())
	if err != nil || len(again.TagIDs) != 2 || !again.DateLastSeen.Equal(attachedAt) {
		t.Fatalf("re-adding a held tag: %+v, %v", again, err)
	}
	c.wantBurst(p.ID, domain.EventPersonCreated, Epoch, attachedAt)

	for _, bad := range []string{"tag_missing", archived, foreign} {
		_, err := c.st.AddPersonTags(ctx, c.acc, p.ID, []string{t3, bad}, c.write())
		if !isErr[*domain.NotFoundError](err) {
			t.Fatalf("attaching %s: %v, want not found", bad, err)
		}
		if got := c.get(p.ID); slices.Contains(got.TagIDs, t3) {
			t.Fatalf("a refused attachment attached %s", t3)
		}
	}
	if _, err := c.st.AddPersonTags(ctx, c.acc, "per_missing", []string{t1}, c.write()); !isErr[*domain.NotFoundError](err) {
		t.Fatalf("tags on an unknown person: %v", err)
	}
	if _, err := other.st.AddPersonTags(ctx, other.acc, p.ID, []string{foreign}, other.write()); !isErr[*domain.NotFoundError](err) {
		t.Fatalf("tags on another account's person: %v", err)
	}

	c.advance(time.Minute)
	if err := c.st.RemovePersonTag(ctx, c.acc, p.ID, t1, c.write()); err != nil {
		t.Fatal(err)
	}
	removedAt := c.now()
	if got := c.get(p.ID); !slices.Equal(got.TagIDs, []string{t2}) || !got.DateLastSeen.Equal(removedAt) {
		t.Fatalf("after removing %s: %+v", t1, got)
	}
	c.advance(time.Minute)
	for _, notHeld := range []string{t1, t3, "tag_missing"} {
		if err := c.st.RemovePersonTag(ctx, c.acc, p.ID, notHeld, c.write()); err != nil {
			t.Fatalf("removing %s, not held: %v", notHeld, err)
		}
	}
	if got := c.get(p.ID); !got.DateLastSeen.Equal(removedAt) {
		t.Fatal("removing tags not held moved date_last_seen")
	}
	c.wantBurst(p.ID, domain.EventPersonCreated, Epoch, removedAt)
	if err := c.st.RemovePersonTag(ctx, c.acc, "per_missing", t1, c.write()); !isErr[*domain.NotFoundError](err) {
		t.Fatalf("removing from an unknown person: %v", err)
	}

	// An archived tag disappears from the person and comes back when revived.
	if err := c.st.ArchiveTag(ctx, c.acc, t2, c.now()); err != nil {
		t.Fatal(err)
	}
	if got := c.get(p.ID); len(got.TagIDs) != 0 || len(got.TagNames) != 0 {
		t.Fatalf("an archived tag is still shown: %+v", got)
	}
	if err := c.st.RemovePersonTag(ctx, c.acc, p.ID, t2, c.write()); err != nil {
		t.Fatal(err)
	}
	if _, revived, err := c.st.CreateTag(ctx, domain.Tag{AccountID: c.acc, Name: "two",
		Context: "person", DateCreated: domain.T(c.now())}); err != nil || !revived {
		t.Fatalf("revive: %v %v", revived, err)
	}
	if got := c.get(p.ID); !slices.Equal(got.TagIDs, []string{t2}) || !slices.Equal(got.TagNames, []string{"two"}) {
		t.Fatalf("a revived tag is not back on its person: %+v", got)
	}
}

func testListPersons(t *testing.T, newStore NewStore) {
	ctx := context.Background()
	c := newPersonCase(t, newStore(t))
	red, blue := c.tag("red"), c.tag("blue")
	gone := c.tag("gone")
	// Five persons seen a minute apart, one seen long ago; then tagging
	// moves three of them and two new ones to one instant, where ties go by id.
	c.setNow(Epoch.Add(-40 * 24 * time.Hour))
	old, _ := c.upsert(domain.PersonUpsert{ExternalID: setText("old")})
	c.setNow(Epoch)
	var seen []*domain.Person
	for i := range 5 {
		p, _ := c.upsert(domain.PersonUpsert{ExternalID: setText(fmt.Sprintf("p%d", i)),
			Email: setText(fmt.Sprintf("P%d@x.test", i))})
		seen = append(seen, p)
		c.advance(time.Minute)
	}
	tie1, _ := c.upsert(domain.PersonUpsert{ExternalID: setText("tie1")})
	tie2, _ := c.upsert(domain.PersonUpsert{ExternalID: setText("tie2")})
	for _, p := range []*domain.Person{seen[1], seen[3], tie1} {
		if _, err := c.st.AddPersonTags(ctx, c.acc, p.ID, []string{red, gone}, c.write()); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []*domain.Person{seen[3], tie1, tie2} {
		if _, err := c.st.AddPersonTags(ctx, c.acc, p.ID, []string{blue}, c.write()); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.st.ArchiveTag(ctx, c.acc, gone, c.now()); err != nil {
		t.Fatal(err)
	}
	o := c.other()
	mine, _ := o.upsert(domain.PersonUpsert{ExternalID: setText("p0"), Email: setText("p1@x.test")})

	ids := func(ps []domain.Person) []string {
		out := []string{}
		for _, p := range ps {
			out = append(out, p.ID)
		}
		return out
	}
	ties := []string{seen[1].ID, seen[3].ID, tie1.ID, tie2.ID}
	slices.Sort(ties)
	wantAll := append([]string{seen[0].ID, seen[2].ID, seen[4].ID}, ties...)
	list := func(t *testing.T, q domain.PersonSelection, page, size int) ([]string, int) {
		t.Helper()
		ps, total, err := c.st.ListPersons(ctx, c.acc, q, domain.PageRequest{Page: page, Size: size})
		if err != nil {
			t.Fatalf("list %+v: %v", q, err)
		}
		return ids(ps), total
	}
	since := Epoch

	t.Run("window: last seen at or after, by last seen then id, paged with exact totals", func(t *testing.T) {
		var got []string
		for page := 1; page <= 3; page++ {
			items, total := list(t, window(since, nil), page, 3)
			if total != len(wantAll) {
				t.Fatalf("page %d total %d, want %d", page, total, len(wantAll))
			}
			got = append(got, items...)
		}
		if !slices.Equal(got, wantAll) || slices.Contains(got, old.ID) {
			t.Fatalf("window order %v, want %v", got, wantAll)
		}
		if items, total := list(t, window(since, nil), 9, 3); len(items) != 0 || total != len(wantAll) {
			t.Fatalf("past the end: %v total %d", items, total)
		}
		later := c.now()
		if items, total := list(t, window(later, nil), 1, 25); total != 4 || len(items) != 4 {
			t.Fatalf("since the last instant (inclusive): %v total %d", items, total)
		}
	})

	t.Run("window filters: external_id, all tag_ids", func(t *testing.T) {
		if items, total := list(t, window(since, textPtr("p2")), 1, 25); total != 1 || items[0] != seen[2].ID {
			t.Fatalf("external_id in the window: %v", items)
		}
		both := []string{seen[3].ID, tie1.ID}
		slices.Sort(both)
		if items, total := list(t, window(since, nil, red, blue), 1, 25); total != 2 || !slices.Equal(items, both) {
			t.Fatalf("red AND blue: %v total %d, want %v", items, total, both)
		}
		if _, total := list(t, window(since, nil, red), 1, 25); total != 3 {
			t.Fatalf("red: total %d, want 3", total)
		}
		if _, total := list(t, window(since, nil, red, red, blue, blue), 1, 25); total != 2 {
			t.Fatalf("repeated ids: total %d, want 2", total)
		}
		for _, unseen := range []string{gone, "tag_missing"} {
			if _, total := list(t, window(since, nil, red, unseen), 1, 25); total != 0 {
				t.Fatalf("with %s: total %d, want 0", unseen, total)
			}
		}
	})

	t.Run("newest first: every window turned round, paged from either end", func(t *testing.T) {
		newest := func(q domain.PersonSelection) domain.PersonSelection { q.NewestFirst = true; return q }
		both := []string{seen[3].ID, tie1.ID}
		slices.Sort(both)
		redOnes := []string{seen[1].ID}
		redTies := []string{seen[3].ID, tie1.ID}
		slices.Sort(redTies)
		redOnes = append(redOnes, redTies...)
		for _, tc := range []struct {
			name string
			q    domain.PersonSelection
			asc  []string
		}{
			{"the window", window(since, nil), wantAll},
			{"holding red", window(since, nil, red), redOnes},
			{"holding red and blue", window(since, nil, red, blue), both},
			{"with an external_id", window(since, textPtr("p2")), []string{seen[2].ID}},
		} {
			want := slices.Clone(tc.asc)
			slices.Reverse(want)
			for _, size := range []int{1, 2, 3, 25} {
				var got []string
				for page := 1; page <= (len(want)+size-1)/size; page++ {
					items, total := list(t, newest(tc.q), page, size)
					if total != len(want) {
						t.Fatalf("%s, size %d page %d: total %d, want %d", tc.name, size, page, total, len(want))
					}
					got = append(got, items...)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%s newest first, size %d: %v, want %v", tc.name, size, got, want)
				}
			}
			if items, total := list(t, newest(tc.q), 9, 3); len(items) != 0 || total != len(want) {
				t.Fatalf("%s newest first, past the end: %v total %d", tc.name, items, total)
			}
		}
	})

	// Which mode a request selects, and which parameters it ignores, is
	// service.SelectPersons' decision, tested there.
	t.Run("lookup: by external_id, by email in any case", func(t *testing.T) {
		if items, total := list(t, byExternalID("p1"), 1, 25); total != 1 || items[0] != seen[1].ID {
			t.Fatalf("external_id lookup: %v", items)
		}
		if items, total := list(t, byEmail("p2@X.TEST"), 1, 25); total != 1 || items[0] != seen[2].ID {
			t.Fatalf("email lookup: %v", items)
		}
		if items, total := list(t, byExternalID("old"), 1, 25); total != 1 || items[0] != old.ID {
			t.Fatalf("lookup has no time bound: %v", items)
		}
		if items, total := list(t, byExternalID("nobody"), 1, 25); total != 0 || len(items) != 0 {
			t.Fatalf("an unknown external_id: %v", items)
		}
		if items, total := list(t, byExternalID("p1"), 2, 25); total != 1 || len(items) != 0 {
			t.Fatalf("lookup page 2: %v total %d", items, total)
		}
	})

	t.Run("list items carry tags and custom values, loaded for the whole page", func(t *testing.T) {
		ps, _, err := c.st.ListPersons(ctx, c.acc, window(since, nil, red, blue), domain.PageRequest{Page: 1, Size: 25})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			if !slices.Contains(p.TagIDs, red) || !slices.Contains(p.TagIDs, blue) || slices.Contains(p.TagIDs, gone) || len(p.TagIDs) != 2 {
				t.Fatalf("%s lists tags %v", p.ID, p.TagIDs)
			}
		}
	})

	t.Run("another account sees only its own", func(t *testing.T) {
		for _, q := range []domain.PersonSelection{window(since, nil), byExternalID("p0"), byEmail("P1@x.test")} {
			ps, total, err := o.st.ListPersons(ctx, o.acc, q, domain.PageRequest{Page: 1, Size: 25})
			if err != nil || total != 1 || len(ps) != 1 || ps[0].ID != mine.ID {
				t.Fatalf("another account lists %v (total %d) for %+v, want only %s", ids(ps), total, q, mine.ID)
			}
		}
	})
}

func textPtr(s string) *string { return &s }

// window selects the persons last seen at or after since.
func window(since time.Time, externalID *string, tagIDs ...string) domain.PersonSelection {
	return domain.PersonSelection{Mode: domain.PersonWindow, Since: since, ExternalID: externalID, TagIDs: tagIDs}
}

func byExternalID(k string) domain.PersonSelection {
	return domain.PersonSelection{Mode: domain.PersonByExternalID, Key: k}
}

func byEmail(k string) domain.PersonSelection {
	return domain.PersonSelection{Mode: domain.PersonByEmail, Key: k}
}

// testListPersonsNewestFirst pages a window of more persons than a page
// is read from the timeline's edge (its nearby bound), spread over
// milliseconds, hours and days with ties inside each, newest first: every
// page, of every size, is the ascending list turned round.
func testListPersonsNewestFirst(t *testing.T, newStore NewStore) {
	ctx := context.Background()
	c := newPersonCase(t, newStore(t))
	c.setNow(Epoch.Add(-20 * 24 * time.Hour))
	steps := []time.Duration{time.Millisecond, 0, 3 * time.Millisecond, time.Second, 70 * time.Second, time.Hour, 26 * time.Hour, 5 * 24 * time.Hour}
	for i := range 12 {
		batch := make([]domain.PersonUpsert, 50)
		for j := range batch {
			batch[j] = domain.PersonUpsert{ExternalID: setText(fmt.Sprintf("n%02d-%02d", i, j))}
		}
		if _, err := c.st.UpsertPersons(ctx, c.acc, batch, c.write()); err != nil {
			t.Fatal(err)
		}
		c.advance(steps[i%len(steps)])
	}
	since := Epoch.Add(-21 * 24 * time.Hour)
	read := func(q domain.PersonSelection, page, size int) ([]string, int) {
		t.Helper()
		ps, total, err := c.st.ListPersons(ctx, c.acc, q, domain.PageRequest{Page: page, Size: size})
		if err != nil {
			t.Fatal(err)
		}
		out := []string{}
		for _, p := range ps {
			out = append(out, p.ID)
		}
		return out, total
	}
	var asc []string
	for page := 1; ; page++ {
		items, _ := read(window(since, nil), page, 100)
		if len(items) == 0 {
			break
		}
		asc = append(asc, items...)
	}
	if len(asc) != 600 {
		t.Fatalf("%d persons in the window, want 600", len(asc))
	}
	want := slices.Clone(asc)
	slices.Reverse(want)
	q := window(since, nil)
	q.NewestFirst = true
	for _, size := range []int{7, 25, 100} {
		var got []string
		for page := 1; page <= (len(want)+size-1)/size; page++ {
			items, total := read(q, page, size)
			if total != len(want) {
				t.Fatalf("size %d page %d: total %d", size, page, total)
			}
			got = append(got, items...)
		}
		if !slices.Equal(got, want) {
			i := 0
			for i < len(got) && i < len(want) && got[i] == want[i] {
				i++
			}
			t.Fatalf("size %d: newest first differs from the ascending list turned round at item %d of %d", size, i, len(got))
		}
	}
	// A later bound: only the persons seen since, still newest first.
	recent := c.now().Add(-6 * 24 * time.Hour)
	q = window(recent, nil)
	q.NewestFirst = true
	var ascRecent, newestRecent []string
	for page := 1; page <= 3; page++ {
		items, _ := read(window(recent, nil), page, 100)
		ascRecent = append(ascRecent, items...)
		items, _ = read(q, page, 100)
		newestRecent = append(newestRecent, items...)
	}
	slices.Reverse(ascRecent)
	if len(ascRecent) == 0 || len(ascRecent) >= 300 || !slices.Equal(newestRecent, ascRecent) {
		t.Fatalf("since %s: %d newest first, want the %d ascending turned round", recent, len(newestRecent), len(ascRecent))
	}
}
