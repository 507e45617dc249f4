package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/testenv"
)

func (e *env) write() store.Write { return store.Write{Now: e.clock.Now(), Window: time.Minute} }

// keyNamed mints a key with a name, as pds keys create --name does.
func (e *env) keyNamed(account, name string, scopes ...domain.Scope) domain.APIKey {
	e.t.Helper()
	k, _, err := service.MintKey(context.Background(), e.st, service.KeyRequest{AccountID: account, Name: &name, Scopes: scopes}, e.clock.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	return k
}

// TestSuppressionsSearchAndKeyNames: the Suppressions screen names the key
// that made each suppression, and finds the suppression of an identifier
// (posted behind the form token, so it is never in a URL) as GET
// /suppressions finds it: in its normal form, only in the account, a bad
// identifier shown beside its field with nothing changed.
func TestSuppressionsSearchAndKeyNames(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		e := newEnv(t, eng)
		acc, other := e.account(), e.account()
		ctx := context.Background()
		p := erasable(t, e, acc, "ada@search.test")
		q := erasable(t, e, other, "ada@search.test")
		name := "privacy-desk"
		full, key := e.key(acc, withErase()...)
		if _, err := e.st.ErasePerson(ctx, acc, p.ID, domain.EraseRequest{Suppress: true, KeyID: key.ID}, e.write()); err != nil {
			t.Fatal(err)
		}
		if _, err := e.st.ErasePerson(ctx, other, q.ID, domain.EraseRequest{Suppress: true, KeyID: "key_elsewhere"}, e.write()); err != nil {
			t.Fatal(err)
		}
		found, err := e.st.FindSuppressions(ctx, acc, domain.CheckedValues(new("ada@search.test"), nil, nil, nil))
		if err != nil || len(found) != 1 {
			t.Fatalf("the email's suppression: %+v, %v", found, err)
		}
		theirs, err := e.st.FindSuppressions(ctx, other, domain.CheckedValues(new("ada@search.test"), nil, nil, nil))
		if err != nil || len(theirs) != 1 {
			t.Fatalf("the other account's: %+v, %v", theirs, err)
		}

		b := e.browser()
		b.signIn(full)
		// The key was minted without a name: it is shown by its prefix.
		list := b.get("/console/suppressions")
		if list.status != http.StatusOK || !strings.Contains(list.body, key.Prefix+"…"+key.LastFour) || strings.Contains(list.body, "<code>"+key.ID+"</code>") {
			t.Fatalf("the suppressions name their key by its prefix when it has no name: %d %s", list.status, list.body)
		}
		named, _, err := e.st.UpsertPerson(ctx, acc, domain.PersonUpsert{Email: domain.Opt[string]{Set: true, Value: "bob@search.test"}}, e.write())
		if err != nil {
			t.Fatal(err)
		}
		namedKey := e.keyNamed(acc, name, withErase()...)
		if _, err := e.st.ErasePerson(ctx, acc, named.ID, domain.EraseRequest{Suppress: true, KeyID: namedKey.ID}, e.write()); err != nil {
			t.Fatal(err)
		}
		if list := b.get("/console/suppressions"); !strings.Contains(list.body, "<td>"+name+"</td>") {
			t.Fatalf("the suppressions do not name the key %q: %s", name, list.body)
		}

		csrf := b.csrf("/console/suppressions")
		search := func(kind, identifier string) page {
			t.Helper()
			return b.post("/console/suppressions", url.Values{"csrf": {csrf}, "kind": {kind}, "identifier": {identifier}})
		}
		for _, identifier := range []string{"ada@search.test", "ADA@Search.Test"} {
			res := search("email", identifier)
			if res.status != http.StatusOK || !strings.Contains(res.body, "1 suppression of that email") ||
				!strings.Contains(res.body, found[0].Hash) || strings.Contains(res.body, theirs[0].Hash) ||
				!strings.Contains(res.body, `action="/console/suppressions/`+found[0].ID+`/lift"`) {
				t.Fatalf("search %q: %d %s", identifier, res.status, res.body)
			}
			if strings.Contains(strings.ToLower(res.body), "ada@search.test") {
				t.Fatalf("the search's answer shows the identifier it was given: %s", res.body)
			}
		}
		if res := search("external_id", "ext-ada@search.test"); res.status != http.StatusOK || !strings.Contains(res.body, "1 suppression of that external_id") {
			t.Fatalf("search by external id: %d %s", res.status, res.body)
		}
		if res := search("email", "nobody@search.test"); res.status != http.StatusOK || !strings.Contains(res.body, "0 suppressions of that email") {
			t.Fatalf("an identifier never suppressed: %d %s", res.status, res.body)
		}
		for _, tc := range []struct{ kind, identifier, field, says string }{
			{"email", "", "identifier", "must not be empty"},
			{"email", "not an address", "identifier", "is not an email address"},
			{"f_id", " f-1", "identifier", "white space"},
			{"name", "ada", "kind", "kind"},
		} {
			res := search(tc.kind, tc.identifier)
			if res.status != http.StatusBadRequest || !strings.Contains(res.body, `id="`+tc.field+`-error"`) || !strings.Contains(res.body, tc.says) {
				t.Fatalf("search %s %q: %d, want a 400 beside %s saying %q: %s", tc.kind, tc.identifier, res.status, tc.field, tc.says, res.body)
			}
		}
		if res := b.post("/console/suppressions", url.Values{"kind": {"email"}, "identifier": {"ada@search.test"}}); res.status != http.StatusForbidden {
			t.Fatalf("a search without the form token: %d", res.status)
		}
		if _, total, err := e.st.ListSuppressions(ctx, acc, domain.PageRequest{Page: 1, Size: 25}); err != nil || total != 3 {
			t.Fatalf("after the searches: %d suppressions, %v", total, err)
		}

		// A key without persons:erase is refused the search, as GET /suppressions.
		reader, _ := e.key(acc, domain.ScopePersonsRead)
		rb := e.browser()
		rb.signIn(reader)
		if res := rb.post("/console/suppressions", url.Values{"csrf": {rb.csrf("/console/persons")}, "kind": {"email"},
			"identifier": {"ada@search.test"}}); res.status != http.StatusForbidden {
			t.Fatalf("a key without persons:erase searches: %d", res.status)
		}
	})
}
