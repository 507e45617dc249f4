package httpapi_test

import (
	"net/url"
	"testing"

	"github.com/pds-dev/pds/internal/httpapi/apitest"
	"github.com/pds-dev/pds/internal/testenv"
)

// TestLookAlikeIdentifiersAreOneOrRefused: an identifier that looks like
// another is either the same identifier (one normal form for matching,
// uniqueness, suppression and storage) or refused: a zero-width space, a
// trailing no-break space or a trailing space does not make a suppressed
// identifier new; a reformatted phone is the suppressed phone; and the
// Kelvin sign in "Kate" matches kate@example.org without replacing the
// stored email, which every read shows in its normal form.
func TestLookAlikeIdentifiersAreOneOrRefused(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		acc := env.NewAccount()
		key := env.Key(acc)
		gone := upsertPerson(env, key, map[string]any{"email": "erase.me@example.org", "external_id": "erase-me-ext",
			"phone": "+44 20 7946 0000"}, 201)
		env.Delete(key, "/persons/"+gone.ID+"?suppress=true").Want(204)

		for _, body := range []map[string]any{
			{"email": "erase.me@example.org\u200b"},
			{"email": "erase.me@example.org\u00a0"},
			{"external_id": "erase-me-ext "},
			{"external_id": "erase-me-ext\u2060"},
		} {
			if res := env.Post(key, "/persons", body); res.Status != 400 {
				t.Errorf("%q: %d %s, want 400", body, res.Status, res.Body)
			}
		}
		for _, body := range []map[string]any{
			{"email": "Erase.Me@EXAMPLE.org"},
			{"email": "erase.me@\uff45xample.org"}, // a fullwidth e
			{"external_id": "erase-me-\uff45xt"},
			{"phone": "+44 (20) 7946-0000"},
			{"phone": "+44 20 7946 0000"},
		} {
			res := env.Post(key, "/persons", body)
			if res.Status != 409 || res.Problem().Type != "urn:pds:problem:suppressed" {
				t.Errorf("%q: %d %s, want 409 suppressed", body, res.Status, res.Body)
			}
		}

		kate := upsertPerson(env, key, map[string]any{"email": "kate@example.org", "first_name": "Kate"}, 201)
		matched := upsertPerson(env, key, map[string]any{"email": "\u212Aate@example.org", "last_name": "Kelvin"}, 200)
		if matched.ID != kate.ID || matched.Email == nil || *matched.Email != "kate@example.org" {
			t.Fatalf("the Kelvin-sign email: %+v, want kate's person with its email kate@example.org", matched)
		}
		if got := getPerson(env, key, kate.ID); got.Email == nil || *got.Email != "kate@example.org" {
			t.Fatalf("kate's stored email: %v", got.Email)
		}
		var found struct {
			Total int          `json:"total"`
			Items []personView `json:"items"`
		}
		env.Get(key, "/persons?email="+url.QueryEscape("\u212Aate@Example.org")).Want(200).JSON(&found)
		if found.Total != 1 || found.Items[0].ID != kate.ID {
			t.Fatalf("a lookup by the Kelvin-sign email: %+v", found)
		}
		env.Get(key, "/persons?email="+url.QueryEscape("kate@example.org\u200b")).Want(400)
		mixed := upsertPerson(env, key, map[string]any{"email": "Zoe@Example.ORG", "external_id": "Crm-\uff11"}, 201)
		if *mixed.Email != "zoe@example.org" || *mixed.ExternalID != "Crm-1" {
			t.Fatalf("identifiers are stored in their normal form: email %q, external_id %q", *mixed.Email, *mixed.ExternalID)
		}
		appendCrumb(env, key, map[string]any{"flavor": "page_view", "email": "ZOE@example.org"}, 201)
		crumbs := listOf[breadcrumbView](env, key, "/breadcrumbs?person_id="+mixed.ID)
		if crumbs.Total != 1 || crumbs.Items[0].Email == nil || *crumbs.Items[0].Email != "zoe@example.org" {
			t.Fatalf("a breadcrumb's email is stored in its normal form: %+v", crumbs)
		}
		// Update Person's email goes the same way.
		env.Patch(key, "/persons/"+mixed.ID, map[string]any{"email": "\u212Aate@example.org"}).Want(409)
		env.Patch(key, "/persons/"+mixed.ID, map[string]any{"email": "erase.me@example.org\u200b"}).Want(400)
	})
}
