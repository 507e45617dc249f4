package console_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/testenv"
)

// duplicates makes two persons of the account that are one human: the
// first seen by its email alone, the second by an external id, another
// email, a tag and two breadcrumbs.
func duplicates(t *testing.T, e *env, acc, name string) (kept, dup *domain.Person) {
	t.Helper()
	ctx := context.Background()
	w := store.Write{Now: e.clock.Now(), Window: time.Minute}
	kept, _, err := e.st.UpsertPerson(ctx, acc, domain.PersonUpsert{Email: domain.Opt[string]{Set: true, Value: name + "@merge.test"}}, w)
	if err != nil {
		t.Fatal(err)
	}
	dup, _, err = e.st.UpsertPerson(ctx, acc, domain.PersonUpsert{ExternalID: domain.Opt[string]{Set: true, Value: "crm-" + name},
		Email: domain.Opt[string]{Set: true, Value: name + ".work@merge.test"}}, w)
	if err != nil {
		t.Fatal(err)
	}
	tag, _, err := e.st.CreateTag(ctx, domain.Tag{ID: domain.NewID("tag"), AccountID: acc, Name: "dup-" + name, Context: "person", DateCreated: domain.T(e.clock.Now())})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.AddPersonTags(ctx, acc, dup.ID, []string{tag.ID}, w); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, _, err := e.st.AppendBreadcrumb(ctx, acc, domain.BreadcrumbInput{Flavor: "page_view", PersonID: &dup.ID}, w); err != nil {
			t.Fatal(err)
		}
	}
	return kept, dup
}

// TestMergeIsConfirmedThenDone: the person page offers the merge to a key
// with persons:write alone; finding the other person by external id shows
// what moves (the identifier that fills a gap, the one that becomes an
// alias, the tags and breadcrumbs) before anything is merged; the
// confirmation's post merges as the API does and shows the survivor. A
// post without the session's token, or from a key without
// persons:write, merges nothing; a person that is not found, or the
// survivor itself, is the API's problem beside the field; another
// account's person is absent.
func TestMergeIsConfirmedThenDone(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		e := newEnv(t, eng)
		acc, other := e.account(), e.account()
		kept, dup := duplicates(t, e, acc, "ada")
		ctx := context.Background()
		path := "/console/persons/" + kept.ID

		reader, _ := e.key(acc, domain.ScopePersonsRead, domain.ScopeBreadcrumbsRead)
		rb := e.browser()
		rb.signIn(reader)
		if page := rb.get(path); page.status != http.StatusOK || strings.Contains(page.body, "Merge another person") {
			t.Fatalf("a key without persons:write is offered the merge: %d", page.status)
		}
		if page := rb.get(path + "/merge?by=id&other=" + dup.ID); page.status != http.StatusForbidden {
			t.Errorf("the merge page without persons:write: %d", page.status)
		}
		if forged := rb.post(path+"/merge", url.Values{"csrf": {rb.csrf("/console/")}, "from": {dup.ID}}); forged.status != http.StatusForbidden ||
			!strings.Contains(forged.body, "lacks the scope persons:write") {
			t.Errorf("a merge without persons:write: %d", forged.status)
		}

		writer, _ := e.key(acc, domain.ScopePersonsRead, domain.ScopePersonsWrite, domain.ScopeBreadcrumbsRead)
		b := e.browser()
		b.signIn(writer)
		if page := b.get(path); !strings.Contains(page.body, "Merge another person into this one") {
			t.Fatal("a key with persons:write is not offered the merge")
		}
		confirm := b.get(path + "/merge?by=external_id&other=crm-ada")
		text := tagsOut.ReplaceAllString(confirm.body, "")
		for _, want := range []string{"What moves", dup.ID, "External id crm-ada: becomes this person's own",
			"Email ada.work@merge.test: becomes an alias of this person", "1 tags", "2 breadcrumbs", "Merge " + dup.ID + " into this person"} {
			if !strings.Contains(text, want) {
				t.Errorf("the confirmation does not name %q:\n%s", want, text)
			}
		}
		if _, err := e.st.GetPerson(ctx, acc, dup.ID); err != nil {
			t.Fatalf("the confirmation merged: %v", err)
		}
		for other, want := range map[string]string{
			"?by=email&other=nobody@merge.test":    "Not Found (404)",
			"?by=email&other=not+an+email":         "is not an email address",
			"?by=id&other=" + kept.ID:              "cannot be merged into itself",
			"?by=id&other=per_0000000000000000000": "Not Found (404)",
		} {
			page := b.get(path + "/merge" + other)
			if page.status/100 != 4 || !strings.Contains(tagsOut.ReplaceAllString(page.body, ""), want) || !strings.Contains(page.body, `id="other-error"`) {
				t.Errorf("%s: %d, not the problem %q beside the field", other, page.status, want)
			}
		}
		token := b.csrf(path + "/merge?by=id&other=" + dup.ID)
		if p := b.post(path+"/merge", url.Values{"from": {dup.ID}}); p.status != http.StatusForbidden {
			t.Errorf("a merge without the token: %d", p.status)
		}
		if p := b.post(path+"/merge", url.Values{"csrf": {token}, "from": {dup.ID}}, "Sec-Fetch-Site", "cross-site"); p.status != http.StatusForbidden {
			t.Errorf("a merge from another site: %d", p.status)
		}
		if _, err := e.st.GetPerson(ctx, acc, dup.ID); err != nil {
			t.Fatalf("a refused merge merged: %v", err)
		}

		// A key that may merge but read nothing: the confirmation names the
		// ids alone, none of what the reads it lacks would answer.
		blind, _ := e.key(acc, domain.ScopePersonsWrite)
		bb := e.browser()
		bb.signIn(blind)
		page := bb.get(path + "/merge?by=id&other=" + dup.ID)
		text = tagsOut.ReplaceAllString(page.body, "")
		if page.status != http.StatusOK || !strings.Contains(text, "Merge "+dup.ID+" into this person") {
			t.Fatalf("persons:write alone: %d\n%s", page.status, text)
		}
		for _, hidden := range []string{"ada@merge.test", "crm-ada", "ada.work@merge.test", "1 tags", "2 breadcrumbs"} {
			if strings.Contains(text, hidden) {
				t.Errorf("persons:write alone is shown %q", hidden)
			}
		}
		if page := bb.get(path + "/merge?by=email&other=ada.work@merge.test"); page.status != http.StatusForbidden {
			t.Errorf("a lookup by email without persons:read: %d", page.status)
		}

		// Another account's key: both persons are absent.
		foreignKey, _ := e.key(other, domain.ScopePersonsRead, domain.ScopePersonsWrite)
		fb := e.browser()
		fb.signIn(foreignKey)
		if page := fb.get(path + "/merge"); page.status != http.StatusNotFound {
			t.Errorf("another account's merge page: %d", page.status)
		}
		if post := fb.post(path+"/merge", url.Values{"csrf": {fb.csrf("/console/")}, "from": {dup.ID}}); post.status != http.StatusNotFound {
			t.Errorf("another account's merge: %d", post.status)
		}

		done := b.post(path+"/merge", url.Values{"csrf": {token}, "from": {dup.ID}})
		if done.status != http.StatusSeeOther || done.location != path+"?done=merged" {
			t.Fatalf("the merge: %d to %q: %s", done.status, done.location, done.body)
		}
		survivor := b.get(done.location)
		for _, want := range []string{"Merged:", "crm-ada", "ada@merge.test", "2 in all"} {
			if !strings.Contains(survivor.body, want) {
				t.Errorf("the survivor's page does not show %q", want)
			}
		}
		var merged *domain.MergedError
		if _, err := e.st.GetPerson(ctx, acc, dup.ID); !errors.As(err, &merged) || merged.MergedInto != kept.ID {
			t.Fatalf("the merged person reads: %v", err)
		}
		if again := b.post(path+"/merge", url.Values{"csrf": {token}, "from": {dup.ID}}); again.status != http.StatusSeeOther {
			t.Errorf("the merge again (idempotent): %d", again.status)
		}
		if page := b.get("/console/persons/" + dup.ID + "/merge"); page.status != http.StatusNotFound || !strings.Contains(page.body, `href="/console/persons/`+kept.ID+`"`) {
			t.Errorf("the merge page of the merged id: %d, not the problem naming the survivor", page.status)
		}
	})
}
