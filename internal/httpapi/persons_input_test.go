package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/pds-dev/pds/internal/httpapi/apitest"
	"github.com/pds-dev/pds/internal/testenv"
)

// PostgreSQL refuses the NUL character and bytes that are not UTF-8 in text;
// such input is refused before any handler runs, alike on both engines: a
// body member or query parameter holding it is a 400 pointing at it, a path
// id holding it names nothing (404), and nothing is changed.
func TestPersonInputsWithNULAndInvalidText(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		key := env.Key(env.NewAccount())
		createField(env, key, map[string]any{"collection": "Person", "data_type": "str", "key": "nick"})
		createField(env, key, map[string]any{"collection": "Person", "data_type": "list", "key": "colors"})
		p := upsertPerson(env, key, map[string]any{"external_id": "x"}, 201)

		for _, tc := range []struct{ body, pointer string }{
			{`{"first_name":"a\u0000b"}`, "/first_name"},
			{`{"phone":"\u0000"}`, "/phone"},
			{`{"external_id":"a\u0000b"}`, "/external_id"},
			{`{"f_id":"a\u0000b"}`, "/f_id"},
			{`{"email":"a\u0000b@x.test"}`, "/email"},
			{`{"custom_fields":{"nick":"a\u0000b"}}`, "/custom_fields/nick"},
			{`{"custom_fields":{"colors":["ok","\u0000"]}}`, "/custom_fields/colors/1"},
		} {
			wantInvalid(t, env.Post(key, "/persons", tc.body).Want(400).Problem(), tc.pointer)
			if !strings.Contains(tc.body, "_id") {
				wantInvalid(t, env.Patch(key, "/persons/"+p.ID, tc.body).Want(400).Problem(), tc.pointer)
			}
		}
		wantInvalid(t, env.Post(key, "/persons/"+p.ID+"/tags", `{"tag_ids":["tag\u0000"]}`).Want(400).Problem(), "/tag_ids/0")
		for _, member := range []string{"external_id", "person_id", "campaign_id", "project_id"} {
			body := `{"flavor":"custom","email":"a@x.test","` + member + `":"\u0000"}`
			wantInvalid(t, env.Post(key, "/breadcrumbs", body).Want(400).Problem(), "/"+member)
		}

		for _, id := range []string{"%00", "per_%00", "%ff"} {
			env.Get(key, "/persons/"+id).Want(404).Problem()
			env.Patch(key, "/persons/"+id, map[string]any{"first_name": "x"}).Want(404)
			env.Post(key, "/persons/"+id+"/tags", map[string]any{"tag_ids": []string{"tag_x"}}).Want(404)
			env.Delete(key, "/persons/"+id+"/tags/tag_x").Want(404)
			env.Delete(key, "/persons/"+p.ID+"/tags/"+id).Want(404)
		}

		since := "updated_since=" + strings.ReplaceAll(nowText(env), ":", "%3A")
		for q, param := range map[string]string{
			"/persons?external_id=%00": "external_id", "/persons?email=a%00@x.test": "email", "/persons?external_id=%ff": "external_id",
			"/persons?" + since + "&tag_ids=%00": "tag_ids", "/breadcrumbs?person_id=%00": "person_id",
			"/breadcrumbs?campaign_id=%00": "campaign_id", "/breadcrumbs?project_id=%ff": "project_id",
		} {
			p := env.Get(key, q).Want(400).Problem()
			if len(p.Errors) != 1 || p.Errors[0].Parameter != param {
				t.Errorf("%s: %+v, want the parameter %s named", q, p, param)
			}
		}
		if got := getPerson(env, key, p.ID); deref(got.ExternalID) != "x" || got.FirstName != nil || len(got.CustomFields) != 0 {
			t.Fatalf("refused writes changed the person: %+v", got)
		}
		env.Do(apitest.Request{Method: http.MethodGet, Path: "/persons/" + p.ID, Key: key}).Want(200)
	})
}

// A foreign person's id and an id nobody holds get the same 404 body,
// request_id aside, on every person route: nothing tells them apart.
func TestForeignPersonIsAbsent(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		owner := env.Key(env.NewAccount())
		foreign := upsertPerson(env, owner, map[string]any{"external_id": "mine"}, 201).ID
		tag := createTag(env, owner, "t", "person").ID
		key := env.Key(env.NewAccount())
		ownTag := createTag(env, key, "t", "person").ID
		absent := "per_" + strings.Repeat("0", 24)

		body := func(id string, r apitest.Request) string {
			r.Key, r.Path = key, strings.ReplaceAll(r.Path, "{id}", id)
			if s, ok := r.Body.(string); ok {
				r.Body = strings.ReplaceAll(s, "{id}", id)
			}
			m := env.Do(r).Want(404).Map()
			delete(m, "request_id")
			raw, _ := json.Marshal(m)
			return strings.ReplaceAll(string(raw), id, "{id}")
		}
		for _, r := range []apitest.Request{
			{Method: http.MethodGet, Path: "/persons/{id}"},
			{Method: http.MethodGet, Path: "/persons/{id}?extended=true"},
			{Method: http.MethodPatch, Path: "/persons/{id}", Body: `{"first_name":"x"}`},
			{Method: http.MethodPost, Path: "/persons/{id}/tags", Body: `{"tag_ids":["` + ownTag + `"]}`},
			{Method: http.MethodDelete, Path: "/persons/{id}/tags/" + ownTag},
			{Method: http.MethodPost, Path: "/breadcrumbs", Body: `{"flavor":"custom","person_id":"{id}"}`},
		} {
			if a, f := body(absent, r), body(foreign, r); a != f {
				t.Errorf("%s %s: absent %s, foreign %s", r.Method, r.Path, a, f)
			}
		}
		// A foreign tag is an absent tag too.
		p := upsertPerson(env, key, map[string]any{"external_id": "p"}, 201)
		r := apitest.Request{Method: http.MethodPost, Path: "/persons/" + p.ID + "/tags", Body: `{"tag_ids":["` + ownTag + `","{id}"]}`}
		if a, f := body("tag_"+strings.Repeat("0", 24), r), body(tag, r); a != f {
			t.Errorf("tags: absent %s, foreign %s", a, f)
		}
		if held := getPerson(env, key, p.ID).TagIDs; len(held) != 0 {
			t.Fatalf("a 404 attached %v", held)
		}
	})
}
