package httpapi_test

import (
	"bytes"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/httpapi/apitest"
	"github.com/pds-dev/pds/internal/testenv"
)

// lockedBuffer is the server's log, written by its handlers as they run.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type suppressionItem struct {
	ID      string `json:"id"`
	Kind    string `json:"kind"`
	Hash    string `json:"hash"`
	Created string `json:"created"`
	KeyID   string `json:"key_id"`
}

// TestSuppressionFoundByIdentifier: GET /suppressions finds the
// suppression of one identifier, in any form a write naming it is refused
// in, only in the key's account, with nothing of the identifier in the
// log; and every write that a suppression refuses names it in its 409, by
// the id that the lookup answers and DELETE /suppressions lifts.
func TestSuppressionFoundByIdentifier(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		var log lockedBuffer
		env := apitest.New(t, eng, apitest.WithLog(&log))
		acc := env.NewAccount()
		key := env.Key(acc)
		writer := env.Key(acc, domain.ScopePersonsRead, domain.ScopePersonsWrite, domain.ScopeBreadcrumbsWrite)
		otherKey := env.Key(env.NewAccount())

		lookup := func(k, query string) pageOf[suppressionItem] {
			t.Helper()
			return listOf[suppressionItem](env, k, "/suppressions?"+query)
		}
		if got := lookup(key, "email=gone%40lookup.test"); got.Total != 0 || len(got.Items) != 0 || got.Page != 1 || got.Size != 25 {
			t.Fatalf("an account that suppressed nothing: %+v", got)
		}

		gone := upsertPerson(env, key, map[string]any{"email": "Gone@Lookup.test", "external_id": "crm-gone",
			"f_id": "f-gone", "phone": "+44 20 7946 0000"}, 201)
		env.Delete(key, "/persons/"+gone.ID+"?suppress=true").Want(204)
		later := upsertPerson(env, key, map[string]any{"email": "later@lookup.test"}, 201)
		env.Delete(key, "/persons/"+later.ID+"?suppress=true").Want(204)
		// The other account suppresses the same email: its own.
		theirs := upsertPerson(env, otherKey, map[string]any{"email": "gone@lookup.test"}, 201)
		env.Delete(otherKey, "/persons/"+theirs.ID+"?suppress=true").Want(204)

		all := lookup(key, "")
		if all.Total != 5 {
			t.Fatalf("the whole list: %+v", all)
		}
		// Newest first: the later erasure's email, then the first's four.
		if all.Items[0].Kind != "email" {
			t.Fatalf("newest first: %+v", all.Items)
		}
		idOf := map[string]suppressionItem{} // kind: the first erasure's suppression
		for _, s := range all.Items[1:] {
			idOf[s.Kind] = s
		}
		for _, tc := range []struct{ param, value, kind string }{
			{"email", "gone@lookup.test", "email"},
			{"email", "GONE@LOOKUP.TEST", "email"},
			{"email", "gone@ｌookup.test", "email"}, // fullwidth l, NFKC
			{"external_id", "crm-gone", "external_id"},
			{"f_id", "f-gone", "f_id"},
			{"phone", "+442079460000", "phone"},
			{"phone", "+44 (20) 7946-0000", "phone"},
		} {
			got := lookup(key, tc.param+"="+url.QueryEscape(tc.value))
			if got.Total != 1 || len(got.Items) != 1 || got.Items[0] != idOf[tc.kind] {
				t.Fatalf("%s=%s: %+v, want %+v", tc.param, tc.value, got, idOf[tc.kind])
			}
			if strings.Contains(log.String(), tc.value) || strings.Contains(strings.ToLower(log.String()), "gone@") {
				t.Fatalf("the log holds the identifier looked up:\n%s", log.String())
			}
		}
		for _, q := range []string{"email=nobody%40lookup.test", "external_id=CRM-GONE", "f_id=crm-gone", "phone=%2B442079460001"} {
			if got := lookup(key, q); got.Total != 0 || len(got.Items) != 0 {
				t.Fatalf("%s, never suppressed: %+v", q, got)
			}
		}
		if got := lookup(key, "email=gone%40lookup.test&page=2"); got.Total != 1 || len(got.Items) != 0 || got.Page != 2 {
			t.Fatalf("a page past the lookup's one item: %+v", got)
		}
		if got := lookup(key, "email=later%40lookup.test"); got.Total != 1 || got.Items[0] != all.Items[0] {
			t.Fatalf("the later erasure's email: %+v", got)
		}
		mine := lookup(key, "email=gone%40lookup.test").Items[0]
		if got := lookup(otherKey, "email=gone%40lookup.test"); got.Total != 1 || got.Items[0].ID == mine.ID {
			t.Fatalf("the other account finds its own suppression, not this one's: %+v", got)
		}
		if got := lookup(otherKey, "external_id=crm-gone"); got.Total != 0 {
			t.Fatalf("the other account never suppressed this external_id: %+v", got)
		}
		env.Get(writer, "/suppressions?email=gone%40lookup.test").Want(403)

		// Every bad lookup is a 400 naming the parameter, and changes nothing.
		for _, tc := range []struct {
			query string
			names []string
		}{
			{"email=gone%40lookup.test&phone=%2B442079460000", []string{"email", "phone"}},
			{"external_id=crm-gone&f_id=f-gone", []string{"external_id", "f_id"}},
			{"email=", []string{"email"}},
			{"f_id=", []string{"f_id"}},
			{"email=gone%40lookup.test&email=gone%40lookup.test", []string{"email"}},
			{"phone=1&phone=2", []string{"phone"}},
			{"email=not-an-address", []string{"email"}},
			{"external_id=%20crm-gone", []string{"external_id"}},
			{"f_id=f%E2%80%8Bgone", []string{"f_id"}},
			{"name=gone", []string{"name"}},
		} {
			wantInvalid(t, env.Get(key, "/suppressions?"+tc.query).Want(400).Problem(), tc.names...)
		}
		if got := lookup(key, ""); got.Total != 5 {
			t.Fatalf("after the refused lookups: %+v", got)
		}

		// Each path that a suppression refuses names it.
		kept := upsertPerson(env, writer, map[string]any{"external_id": "crm-kept"}, 201)
		for _, w := range []struct {
			name, method, path string
			body               any
			pointer, kind      string
		}{
			{"create by email", "POST", "/persons", map[string]any{"email": "GONE@lookup.test"}, "/email", "email"},
			{"create by external_id", "POST", "/persons", map[string]any{"external_id": "crm-gone"}, "/external_id", "external_id"},
			{"upsert matching another person, adding the f_id", "POST", "/persons",
				map[string]any{"external_id": "crm-kept", "f_id": "f-gone"}, "/f_id", "f_id"},
			{"upsert naming the phone written another way", "POST", "/persons",
				map[string]any{"external_id": "crm-kept", "phone": "+44 (20) 7946-0000"}, "/phone", "phone"},
			{"update setting the email", "PATCH", "/persons/" + kept.ID, map[string]any{"email": "gone@lookup.test"}, "/email", "email"},
			{"breadcrumb creating its person", "POST", "/breadcrumbs",
				map[string]any{"flavor": "page_view", "email": "gone@lookup.test"}, "/email", "email"},
		} {
			pr := env.Do(apitest.Request{Method: w.method, Path: w.path, Key: writer, Body: w.body}).Want(409).Problem()
			want := idOf[w.kind].ID
			if pr.Type != domain.SuppressedProblemType || len(pr.Errors) != 1 || pr.Errors[0].Pointer != w.pointer ||
				pr.Errors[0].SuppressionID != want || !strings.Contains(pr.Detail, want) {
				t.Fatalf("%s: %+v, want suppression %s", w.name, pr, want)
			}
		}
		batch := env.Post(writer, "/persons/batch", map[string]any{"persons": []map[string]any{
			{"external_id": "crm-fresh"}, {"external_id": "crm-gone"}, {"email": "fresh@lookup.test", "phone": "+442079460000"}}}).Want(200).Map()
		results := batch["results"].([]any)
		for i, want := range []string{"", idOf["external_id"].ID, idOf["phone"].ID} {
			item := results[i].(map[string]any)
			if want == "" {
				if item["status"] != float64(201) {
					t.Fatalf("batch item %d: %v", i, item)
				}
				continue
			}
			pr, _ := item["problem"].(map[string]any)
			errs, _ := pr["errors"].([]any)
			if item["status"] != float64(409) || len(errs) != 1 || errs[0].(map[string]any)["suppression_id"] != want {
				t.Fatalf("batch item %d: %v, want suppression %s", i, item, want)
			}
		}

		// Lifted by the id the 409 named, the identifier is accepted again.
		env.Delete(key, "/suppressions/"+idOf["external_id"].ID).Want(204)
		if got := lookup(key, "external_id=crm-gone"); got.Total != 0 {
			t.Fatalf("after the lift: %+v", got)
		}
		upsertPerson(env, writer, map[string]any{"external_id": "crm-gone"}, 201)
	})
}
