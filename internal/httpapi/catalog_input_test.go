package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/httpapi/apitest"
	"github.com/pds-dev/pds/internal/testenv"
)

var catalogLists = []string{"/tags", "/custom-fields", "/campaigns", "/projects"}

// TestCatalogPagesFarPastTheEnd: a page whose offset does not fit in an
// integer is still just past the end, on both engines.
func TestCatalogPagesFarPastTheEnd(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		acc := env.NewAccount()
		key := env.Key(acc)
		createTag(env, key, "vip", "person")
		createField(env, key, fieldBody("Person", "tier"))
		if err := env.Store.ImportProjects(context.Background(), acc, []domain.Project{{Name: "Summit"}}); err != nil {
			t.Fatal(err)
		}
		if err := env.Store.ImportCampaigns(context.Background(), acc, []domain.Campaign{{Name: "Spring"}}); err != nil {
			t.Fatal(err)
		}
		for _, path := range catalogLists {
			for _, q := range []string{"page=4611686018427387904&size=100", "page=9223372036854775807&size=2", "page=2&size=1"} {
				if l := listOf[map[string]any](env, key, path+"?"+q); len(l.Items) != 0 || l.Total != 1 {
					t.Errorf("%s?%s: %+v, want no items and total 1", path, q, l)
				}
			}
		}
	})
}

// TestCatalogRepeatedQueryParameters: a parameter given twice is ambiguous,
// so it is a 400 rather than a silent pick of one value.
func TestCatalogRepeatedQueryParameters(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		key := env.Key(env.NewAccount())
		for _, path := range catalogLists {
			wantInvalid(t, env.Get(key, path+"?size=1&size=2").Want(400).Problem(), "size")
			wantInvalid(t, env.Get(key, path+"?page=1&page=1").Want(400).Problem(), "page")
		}
		wantInvalid(t, env.Get(key, "/tags?context=person&context=event").Want(400).Problem(), "context")
		wantInvalid(t, env.Get(key, "/custom-fields?collection=Person&collection=Person").Want(400).Problem(), "collection")
	})
}

// TestCatalogUnstorableIDs: a path id that no row can hold (a NUL character,
// bytes that are not UTF-8) is the ordinary 404, never a database error.
func TestCatalogUnstorableIDs(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		key := env.Key(env.NewAccount())
		for _, id := range []string{"%00", "tag%00x", "%ff%fe"} {
			for _, path := range catalogLists {
				env.Get(key, path+"/"+id).Want(404).Problem()
			}
			env.Patch(key, "/tags/"+id, map[string]any{"name": "x"}).Want(404).Problem()
			env.Delete(key, "/tags/"+id).Want(404).Problem()
			env.Patch(key, "/custom-fields/"+id, map[string]any{"label": "x"}).Want(404).Problem()
			env.Delete(key, "/custom-fields/"+id).Want(404).Problem()
		}
	})
}

// TestCatalogNULInText: no stored text may hold a NUL character; it is a 400
// that names the member.
func TestCatalogNULInText(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		key := env.Key(env.NewAccount())
		tag := createTag(env, key, "vip", "person")
		f := createField(env, key, fieldBody("Person", "tier"))
		nul := "a\x00b"
		wantInvalid(t, env.Post(key, "/tags", map[string]any{"name": nul, "context": "person"}).Want(400).Problem(), "/name")
		wantInvalid(t, env.Patch(key, "/tags/"+tag.ID, map[string]any{"name": nul}).Want(400).Problem(), "/name")
		for _, member := range []string{"key", "label", "description"} {
			body := fieldBody("Person", "other")
			body[member] = nul
			wantInvalid(t, env.Post(key, "/custom-fields", body).Want(400).Problem(), "/"+member)
		}
		for _, member := range []string{"label", "description"} {
			wantInvalid(t, env.Patch(key, "/custom-fields/"+f.ID, map[string]any{member: nul}).Want(400).Problem(), "/"+member)
		}
	})
}

// wantSame404 fails unless both responses are 404s whose bodies are
// identical apart from request_id.
func wantSame404(t *testing.T, a, b *apitest.Response) {
	t.Helper()
	strip := func(r *apitest.Response) []byte {
		m := r.Want(404).Map()
		delete(m, "request_id")
		out, _ := json.Marshal(m)
		return out
	}
	if x, y := strip(a), strip(b); !bytes.Equal(x, y) {
		t.Fatalf("404 bodies differ:\n%s\n%s", x, y)
	}
}

// TestCatalogForeignIsAbsent: a foreign id, an archived id and an id that
// never existed get byte-identical 404 bodies (request_id aside).
func TestCatalogForeignIsAbsent(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		mineAcc := env.NewAccount()
		mine, theirs := env.Key(mineAcc), env.Key(env.NewAccount())
		ctx := context.Background()
		tag := createTag(env, mine, "vip", "person")
		f := createField(env, mine, fieldBody("Person", "tier"))
		if err := env.Store.ImportProjects(ctx, mineAcc, []domain.Project{{ID: "prj_mine", Name: "Summit"}}); err != nil {
			t.Fatal(err)
		}
		if err := env.Store.ImportCampaigns(ctx, mineAcc, []domain.Campaign{{ID: "cmp_mine", Name: "Spring"}}); err != nil {
			t.Fatal(err)
		}
		// An absent id answers with the body of the foreign one once the id
		// in its detail is swapped: nothing else may tell them apart.
		absent := func(path, id, absentID string) *apitest.Response {
			res := env.Get(theirs, path+"/"+absentID)
			res.Body = bytes.ReplaceAll(res.Body, []byte(absentID), []byte(id))
			return res
		}
		for path, id := range map[string]string{"/tags": tag.ID, "/custom-fields": f.ID, "/campaigns": "cmp_mine", "/projects": "prj_mine"} {
			absentID := strings.Replace(id, "_", "_absent", 1)
			wantSame404(t, env.Get(theirs, path+"/"+id), absent(path, id, absentID))
		}
		for path, id := range map[string]string{"/tags": tag.ID, "/custom-fields": f.ID} {
			wantSame404(t, env.Delete(theirs, path+"/"+id), env.Get(theirs, path+"/"+id))
			wantSame404(t, env.Patch(theirs, path+"/"+id, map[string]any{}), env.Get(theirs, path+"/"+id))
			env.Delete(mine, path+"/"+id).Want(204)
			wantSame404(t, env.Get(mine, path+"/"+id), env.Get(theirs, path+"/"+id))
		}
	})
}
