package console_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/testenv"
)

// withErase is every scope, persons:erase among them.
func withErase() []domain.Scope {
	scopes := slices.Clone(domain.AllScopes)
	if !slices.Contains(scopes, domain.ScopePersonsErase) {
		scopes = append(scopes, domain.ScopePersonsErase)
	}
	return scopes
}

// erasable makes a person of the account with two tags, a custom value and
// three breadcrumbs.
func erasable(t *testing.T, e *env, acc, email string) *domain.Person {
	t.Helper()
	ctx := context.Background()
	w := store.Write{Now: e.clock.Now(), Window: time.Minute}
	if err := e.st.ImportCustomFields(ctx, acc, []domain.CustomField{{ID: domain.NewID("cf"), AccountID: acc, Collection: "Person",
		DataType: "str", Key: "plan", FormType: "text", DateCreated: domain.T(e.clock.Now())}}); err != nil {
		t.Fatal(err)
	}
	p, _, err := e.st.UpsertPerson(ctx, acc, domain.PersonUpsert{Email: domain.Opt[string]{Set: true, Value: email},
		ExternalID:   domain.Opt[string]{Set: true, Value: "ext-" + email},
		CustomFields: domain.Opt[map[string]json.RawMessage]{Set: true, Value: map[string]json.RawMessage{"plan": json.RawMessage(`"gold"`)}}}, w)
	if err != nil {
		t.Fatal(err)
	}
	var tags []string
	for _, name := range []string{"vip", "donor"} {
		tag, _, err := e.st.CreateTag(ctx, domain.Tag{ID: domain.NewID("tag"), AccountID: acc, Name: name, Context: "person", DateCreated: domain.T(e.clock.Now())})
		if err != nil {
			t.Fatal(err)
		}
		tags = append(tags, tag.ID)
	}
	if _, err := e.st.AddPersonTags(ctx, acc, p.ID, tags, w); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, _, err := e.st.AppendBreadcrumb(ctx, acc, domain.BreadcrumbInput{Flavor: "page_view", PersonID: &p.ID}, w); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// TestEraseIsOfferedOnlyWithTheScope: a key without persons:erase is
// offered neither the erasure nor the suppressions, and its forged posts
// are the API's 403; a key with it sees a confirmation that names what
// goes, its identifiers only with persons:read; another account's person
// is absent.
func TestEraseIsOfferedOnlyWithTheScope(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		e := newEnv(t, eng)
		acc, other := e.account(), e.account()
		p := erasable(t, e, acc, "ada@erase.test")
		ctx := context.Background()

		writer, _ := e.key(acc, domain.ScopePersonsRead, domain.ScopePersonsWrite, domain.ScopeBreadcrumbsRead)
		wb := e.browser()
		wb.signIn(writer)
		view := wb.get("/console/persons/" + p.ID)
		if view.status != http.StatusOK || strings.Contains(view.body, "Erase this person") || strings.Contains(view.body, "/console/suppressions") {
			t.Fatalf("a key without persons:erase is offered the erasure: %d", view.status)
		}
		token := wb.csrf("/console/persons/" + p.ID)
		for _, path := range []string{"/console/persons/" + p.ID + "/erase", "/console/suppressions"} {
			if page := wb.get(path); page.status != http.StatusForbidden || !strings.Contains(page.body, "lacks the scope persons:erase") {
				t.Errorf("%s without the scope: %d", path, page.status)
			}
		}
		for _, path := range []string{"/console/persons/" + p.ID + "/erase", "/console/suppressions/sup_0000000000000000000000/lift"} {
			forged := wb.post(path, url.Values{"csrf": {token}, "suppress": {"true"}})
			if forged.status != http.StatusForbidden || !strings.Contains(forged.body, "lacks the scope persons:erase") {
				t.Errorf("a forged post to %s: %d %s", path, forged.status, forged.body)
			}
		}
		if _, err := e.st.GetPerson(ctx, acc, p.ID); err != nil {
			t.Fatalf("the forged erasure erased: %v", err)
		}

		eraser, _ := e.key(acc, withErase()...)
		eb := e.browser()
		eb.signIn(eraser)
		if view := eb.get("/console/persons/" + p.ID); !strings.Contains(view.body, "Erase this person") || !strings.Contains(view.body, `href="/console/suppressions"`) {
			t.Fatal("a key with persons:erase is not offered the erasure")
		}
		confirm := eb.get("/console/persons/" + p.ID + "/erase")
		text := tagsOut.ReplaceAllString(confirm.body, "")
		for _, want := range []string{p.ID, "ada@erase.test", "ext-ada@erase.test", "2 tag links", "1 custom field values", "3 breadcrumbs",
			"0 pending deliveries", "Also suppress its identifiers"} {
			if !strings.Contains(text, want) {
				t.Errorf("the confirmation does not name %q:\n%s", want, text)
			}
		}

		// The erasure's form from another site, or without the session's
		// token, is refused and erases nothing.
		eraseToken := eb.csrf("/console/persons/" + p.ID + "/erase")
		for name, c := range map[string]struct {
			form   url.Values
			header []string
		}{
			"another site":   {url.Values{"csrf": {eraseToken}}, []string{"Sec-Fetch-Site", "cross-site"}},
			"another origin": {url.Values{"csrf": {eraseToken}}, []string{"Origin", "https://evil.example"}},
			"no token":       {url.Values{}, nil},
		} {
			if p := eb.post("/console/persons/"+p.ID+"/erase", c.form, c.header...); p.status != http.StatusForbidden {
				t.Errorf("an erasure from %s: %d, want 403", name, p.status)
			}
		}
		if _, err := e.st.GetPerson(ctx, acc, p.ID); err != nil {
			t.Fatalf("a refused erasure erased: %v", err)
		}

		// A key that may erase but not read persons is shown no identifier.
		blind, _ := e.key(acc, domain.ScopePersonsErase)
		bb := e.browser()
		bb.signIn(blind)
		page := bb.get("/console/persons/" + p.ID + "/erase")
		if page.status != http.StatusOK || strings.Contains(page.body, "ada@erase.test") || !strings.Contains(page.body, "show to a key with persons:read") {
			t.Errorf("a key without persons:read: %d, shown its identifiers", page.status)
		}
		if bad := bb.post("/console/persons/"+p.ID+"/erase", url.Values{"csrf": {bb.csrf("/console/")}, "suppress": {"yes"}}); bad.status != http.StatusBadRequest ||
			!strings.Contains(bad.body, "suppress must be true or false") {
			t.Errorf("suppress=yes: %d", bad.status)
		}

		// Another account's key: the person is absent, and stays.
		foreignKey, _ := e.key(other, withErase()...)
		fb := e.browser()
		fb.signIn(foreignKey)
		strip := regexp.MustCompile(`req_[0-9a-f]+|per_[0-9a-f]+`)
		foreign, absent := fb.get("/console/persons/"+p.ID+"/erase"), fb.get("/console/persons/per_0000000000000000000000/erase")
		if foreign.status != http.StatusNotFound || strip.ReplaceAllString(foreign.body, "") != strip.ReplaceAllString(absent.body, "") {
			t.Errorf("another account's erasure page: %d, not the page of an absent id", foreign.status)
		}
		if post := fb.post("/console/persons/"+p.ID+"/erase", url.Values{"csrf": {fb.csrf("/console/")}}); post.status != http.StatusNotFound {
			t.Errorf("erasing another account's person: %d", post.status)
		}
		if _, err := e.st.GetPerson(ctx, acc, p.ID); err != nil {
			t.Fatalf("another account's erasure erased: %v", err)
		}
	})
}

// tagsOut strips a page's markup, leaving its text.
var tagsOut = regexp.MustCompile(`<[^>]*>`)

// TestEraseWithSuppressionThenLift erases a person through the
// confirmation with its identifiers suppressed: the persons list says so,
// the person is gone, the suppressions screen lists the hashes (never an
// identifier) and lifting one removes it; another account sees none.
func TestEraseWithSuppressionThenLift(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		e := newEnv(t, eng)
		acc, other := e.account(), e.account()
		p := erasable(t, e, acc, "grace@erase.test")
		ctx := context.Background()
		eraser, key := e.key(acc, withErase()...)
		b := e.browser()
		b.signIn(eraser)
		token := b.csrf("/console/persons/" + p.ID + "/erase")
		done := b.post("/console/persons/"+p.ID+"/erase", url.Values{"csrf": {token}, "suppress": {"true"}})
		if done.status != http.StatusSeeOther || done.location != "/console/persons?done=erased-suppressed" {
			t.Fatalf("the erasure: %d to %q: %s", done.status, done.location, done.body)
		}
		if list := b.get(done.location); !strings.Contains(list.body, "its identifiers are suppressed") || strings.Contains(list.body, "grace@erase.test") {
			t.Errorf("the persons list after the erasure: %d", list.status)
		}
		if _, err := e.st.GetPerson(ctx, acc, p.ID); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("the erased person reads: %v", err)
		}
		if again := b.get("/console/persons/" + p.ID + "/erase"); again.status != http.StatusNotFound {
			t.Errorf("the confirmation of an erased person: %d", again.status)
		}

		sups, total, err := e.st.ListSuppressions(ctx, acc, domain.PageRequest{Page: 1, Size: 10})
		if err != nil || total < 2 {
			t.Fatalf("suppressions after the erasure: %d, %v", total, err)
		}
		screen := b.get("/console/suppressions")
		for _, s := range sups {
			if !strings.Contains(screen.body, s.Hash) || !strings.Contains(screen.body, s.Kind) || !strings.Contains(screen.body, key.Prefix) {
				t.Errorf("the suppressions screen does not list %+v", s)
			}
		}
		for _, identifier := range []string{"grace@erase.test", "ext-grace@erase.test"} {
			if strings.Contains(screen.body, identifier) {
				t.Errorf("the suppressions screen shows the identifier %q", identifier)
			}
		}
		foreignKey, _ := e.key(other, withErase()...)
		fb := e.browser()
		fb.signIn(foreignKey)
		if page := fb.get("/console/suppressions"); !strings.Contains(page.body, "0 suppressions") || strings.Contains(page.body, sups[0].Hash) {
			t.Error("another account sees the suppressions")
		}
		if lift := fb.post("/console/suppressions/"+sups[0].ID+"/lift", url.Values{"csrf": {fb.csrf("/console/")}}); lift.status != http.StatusNotFound {
			t.Errorf("lifting another account's suppression: %d", lift.status)
		}

		lift := b.post("/console/suppressions/"+sups[0].ID+"/lift", url.Values{"csrf": {b.csrf("/console/suppressions")}})
		if lift.status != http.StatusSeeOther || lift.location != "/console/suppressions?done=lifted" {
			t.Fatalf("lift: %d to %q: %s", lift.status, lift.location, lift.body)
		}
		if _, after, err := e.st.ListSuppressions(ctx, acc, domain.PageRequest{Page: 1, Size: 10}); err != nil || after != total-1 {
			t.Errorf("suppressions after lifting one: %d, %v; want %d", after, err, total-1)
		}
		if page := b.get(lift.location); !strings.Contains(page.body, "Suppression lifted") || strings.Contains(page.body, sups[0].Hash) {
			t.Error("the lifted suppression is still listed, or the notice is missing")
		}
	})
}
