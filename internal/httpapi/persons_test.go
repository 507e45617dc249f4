package httpapi_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/httpapi/apitest"
	"github.com/pds-dev/pds/internal/testenv"
)

// personView is the compact person as a client decodes it.
type personView struct {
	ID           string            `json:"id"`
	Email        *string           `json:"email"`
	ExternalID   *string           `json:"external_id"`
	FirstName    *string           `json:"first_name"`
	LastName     *string           `json:"last_name"`
	Phone        *string           `json:"phone"`
	CustomFields map[string]string `json:"custom_fields"`
	TagIDs       []string          `json:"tag_ids"`
	DateCreated  string            `json:"date_created"`
	DateLastSeen string            `json:"date_last_seen"`
}

func upsertPerson(env *apitest.Env, key string, body map[string]any, status int) personView {
	env.T.Helper()
	var p personView
	env.Post(key, "/persons", body).Want(status).JSON(&p)
	return p
}

func getPerson(env *apitest.Env, key, id string) personView {
	env.T.Helper()
	var p personView
	env.Get(key, "/persons/"+id).Want(200).JSON(&p)
	return p
}

func personIDs(ps []personView) []string {
	ids := []string{}
	for _, p := range ps {
		ids = append(ids, p.ID)
	}
	return ids
}

func deref(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}

// at is the fake clock's reading in the response format.
func nowText(env *apitest.Env) string { return env.Clock.Now().UTC().Format(domain.TimeLayout) }

func TestUpsertPerson(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		cfg := apitest.DefaultConfig()
		cfg.WebhookWindow = 2 * time.Minute
		env := apitest.New(t, eng, apitest.WithConfig(cfg))
		acc := env.NewAccount()
		key := env.Key(acc)

		created := env.Post(key, "/persons", map[string]any{"external_id": "crm-1", "email": "Ada@Example.com", "first_name": "Ada"}).Want(201)
		if keys := slices.Sorted(maps.Keys(created.Map())); strings.Join(keys, ",") !=
			"custom_fields,date_created,date_last_seen,email,external_id,first_name,id,last_name,phone,tag_ids" {
			t.Fatalf("compact person keys %v", keys)
		}
		var p personView
		created.JSON(&p)
		if !strings.HasPrefix(p.ID, "per_") || deref(p.Email) != "ada@example.com" || p.LastName != nil || p.Phone != nil ||
			len(p.TagIDs) != 0 || len(p.CustomFields) != 0 || p.DateCreated != nowText(env) || p.DateLastSeen != nowText(env) {
			t.Fatalf("created %+v", p)
		}
		// The write recorded its burst, due one configured window later.
		b, err := env.Store.PendingBurst(context.Background(), acc, p.ID)
		if err != nil || b.Event != domain.EventPersonCreated || !b.DueAt.Equal(env.Clock.Now().Add(2*time.Minute)) {
			t.Fatalf("burst %+v, %v", b, err)
		}

		env.Clock.Advance(time.Minute)
		for _, body := range []map[string]any{
			{"external_id": "crm-1", "last_name": "Lovelace"},
			{"email": "ADA@example.com", "phone": "+44"},
			{"external_id": "crm-1", "f_id": "fb-1"},
			{"f_id": "fb-1", "first_name": "Augusta"},
		} {
			got := upsertPerson(env, key, body, 200)
			if got.ID != p.ID {
				t.Fatalf("%v matched %s, want %s", body, got.ID, p.ID)
			}
		}
		got := getPerson(env, key, p.ID)
		if deref(got.FirstName) != "Augusta" || deref(got.LastName) != "Lovelace" || deref(got.Phone) != "+44" ||
			deref(got.Email) != "ada@example.com" || got.DateLastSeen != nowText(env) || got.DateCreated == nowText(env) {
			t.Fatalf("after matching upserts: %+v", got)
		}
		// Unchanged re-delivery: 200, nothing moves.
		env.Clock.Advance(time.Minute)
		if again := upsertPerson(env, key, map[string]any{"external_id": "crm-1", "first_name": "Augusta"}, 200); again.DateLastSeen == nowText(env) {
			t.Fatal("an upsert that changed nothing moved date_last_seen")
		}
		// null clears.
		if cleared := upsertPerson(env, key, map[string]any{"external_id": "crm-1", "phone": nil, "f_id": nil}, 200); cleared.Phone != nil {
			t.Fatalf("null did not clear phone: %+v", cleared)
		}

		// Identifiers held by another person are a 409 naming that person.
		bob := upsertPerson(env, key, map[string]any{"external_id": "crm-2", "email": "bob@example.com", "f_id": "fb-2"}, 201)
		wantConflict(t, env.Post(key, "/persons", map[string]any{"external_id": "crm-1", "email": "BOB@example.com"}), bob.ID)
		wantConflict(t, env.Post(key, "/persons", map[string]any{"email": "ada@example.com", "f_id": "fb-2"}), bob.ID)
		wantConflict(t, env.Post(key, "/persons", map[string]any{"external_id": "crm-2", "email": "ada@example.com"}), p.ID)

		// Another account has its own persons, and sees none of these.
		other := env.Key(env.NewAccount())
		if theirs := upsertPerson(env, other, map[string]any{"external_id": "crm-1"}, 201); theirs.ID == p.ID {
			t.Fatal("another account matched this account's person")
		}
		wantNotFound(t, env.Get(other, "/persons/"+p.ID), "person", p.ID)
	})
}

func TestPersonWritesRefuseBadInput(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		key := env.Key(env.NewAccount())
		p := upsertPerson(env, key, map[string]any{"external_id": "x"}, 201)
		for _, tc := range []struct {
			body    any
			pointer string
		}{
			{map[string]any{"external_id": ""}, "/external_id"},
			{map[string]any{"f_id": ""}, "/f_id"},
			{map[string]any{"email": "not-an-email"}, "/email"},
			{map[string]any{"email": "a b@x.test"}, "/email"},
			{map[string]any{"first_name": strings.Repeat("a", 256)}, "/first_name"},
			{map[string]any{"first_name": 5}, "/first_name"},
			{map[string]any{"nickname": "x"}, "/nickname"},
			{map[string]any{"custom_fields": "x"}, "/custom_fields"},
		} {
			wantInvalid(t, env.Post(key, "/persons", tc.body).Want(400).Problem(), tc.pointer)
		}
		for _, tc := range []struct {
			body    any
			pointer string
		}{
			{map[string]any{"external_id": "y"}, "/external_id"},
			{map[string]any{"f_id": nil}, "/f_id"},
			{map[string]any{"email": ""}, "/email"},
			{map[string]any{"phone": []string{"1"}}, "/phone"},
		} {
			wantInvalid(t, env.Patch(key, "/persons/"+p.ID, tc.body).Want(400).Problem(), tc.pointer)
		}
		env.Do(apitest.Request{Method: "POST", Path: "/persons", Key: key, Body: "external_id=x", ContentType: "text/plain"}).Want(415)
		env.Post(key, "/persons", "[]").Want(400)
		if got := getPerson(env, key, p.ID); deref(got.ExternalID) != "x" {
			t.Fatalf("a refused write changed the person: %+v", got)
		}
	})
}

func TestUpdatePerson(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		key := env.Key(env.NewAccount())
		p := upsertPerson(env, key, map[string]any{"external_id": "u", "first_name": "Una", "phone": "1", "email": "una@x.test"}, 201)
		holder := upsertPerson(env, key, map[string]any{"email": "taken@x.test"}, 201)

		env.Clock.Advance(time.Minute)
		var got personView
		env.Patch(key, "/persons/"+p.ID, map[string]any{"last_name": "Vale", "phone": nil}).Want(200).JSON(&got)
		if deref(got.FirstName) != "Una" || deref(got.LastName) != "Vale" || got.Phone != nil || deref(got.ExternalID) != "u" ||
			got.DateLastSeen != nowText(env) {
			t.Fatalf("patched %+v", got)
		}
		changed := got.DateLastSeen
		env.Clock.Advance(time.Minute)
		env.Patch(key, "/persons/"+p.ID, map[string]any{"last_name": "Vale"}).Want(200).JSON(&got)
		if got.DateLastSeen != changed {
			t.Fatal("a patch with the held values moved date_last_seen")
		}
		env.Patch(key, "/persons/"+p.ID, map[string]any{}).Want(200)

		wantConflict(t, env.Patch(key, "/persons/"+p.ID, map[string]any{"email": "TAKEN@x.test"}), holder.ID)
		wantNotFound(t, env.Patch(key, "/persons/per_missing", map[string]any{"first_name": "x"}), "person", "per_missing")
		other := env.Key(env.NewAccount())
		wantNotFound(t, env.Patch(other, "/persons/"+p.ID, map[string]any{"first_name": "x"}), "person", p.ID)
		if got := getPerson(env, key, p.ID); deref(got.FirstName) != "Una" {
			t.Fatalf("another account changed the person: %+v", got)
		}
	})
}

func TestPersonCustomFieldValues(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		key := env.Key(env.NewAccount())
		for _, f := range [][2]string{{"n", "int"}, {"ratio", "float"}, {"price", "money"}, {"ok", "bool"},
			{"colors", "list"}, {"born", "date"}, {"nick", "str"}, {"bio", "unicode"}, {"gone", "str"}} {
			createField(env, key, map[string]any{"collection": "Person", "data_type": f[1], "key": f[0]})
		}
		for _, f := range listOf[fieldView](env, key, "/custom-fields?collection=Person&size=100").Items {
			if f.Key == "gone" {
				env.Delete(key, "/custom-fields/"+f.ID).Want(204)
			}
		}
		createField(env, key, fieldBody("Breadcrumb", "crumb_only"))

		p := upsertPerson(env, key, map[string]any{"external_id": "cf", "custom_fields": map[string]any{
			"n": 5, "ratio": "2.5", "price": 19.90, "ok": true, "colors": []string{"red", "blue"},
			"born": "2026-11-21T12:00:00+02:00", "nick": "Z", "bio": "Zoë",
		}}, 201)
		want := map[string]string{"n": "5", "ratio": "2.5", "price": "19.9", "ok": "true", "colors": `["red","blue"]`,
			"born": "2026-11-21T10:00:00.000Z", "nick": "Z", "bio": "Zoë"}
		if !maps.Equal(p.CustomFields, want) {
			t.Fatalf("stored %v, want %v", p.CustomFields, want)
		}
		// A number written as text keeps its digits.
		var got personView
		env.Patch(key, "/persons/"+p.ID, map[string]any{"custom_fields": map[string]any{"price": "19.90", "n": "-3", "ok": "false", "nick": nil}}).
			Want(200).JSON(&got)
		if got.CustomFields["price"] != "19.90" || got.CustomFields["n"] != "-3" || got.CustomFields["ok"] != "false" ||
			got.CustomFields["bio"] != "Zoë" || len(got.CustomFields) != 7 {
			t.Fatalf("merged %v", got.CustomFields)
		}

		for _, tc := range []struct {
			key   string
			value any
		}{
			{"n", 1.5}, {"n", "five"}, {"ratio", "1,5"}, {"price", true}, {"ok", "yes"}, {"colors", "red"},
			{"colors", []int{1}}, {"colors", []any{"a", nil}}, {"born", "21/11/2026"}, {"born", "9999-12-31T23:59:59-01:00"}, {"nick", 5}, {"bio", []string{}},
			{"unknown", "x"}, {"gone", "x"}, {"crumb_only", "x"},
		} {
			p := env.Patch(key, "/persons/"+p.ID, map[string]any{"custom_fields": map[string]any{tc.key: tc.value}}).Want(400).Problem()
			wantInvalid(t, p, "/custom_fields/"+tc.key)
			if !strings.Contains(p.Detail, tc.key) {
				t.Errorf("400 for %s does not name the key: %q", tc.key, p.Detail)
			}
		}
		if after := getPerson(env, key, p.ID); !maps.Equal(after.CustomFields, got.CustomFields) {
			t.Fatalf("refused values changed the person: %v", after.CustomFields)
		}
		var cleared personView
		env.Patch(key, "/persons/"+p.ID, map[string]any{"custom_fields": nil}).Want(200).JSON(&cleared)
		if len(cleared.CustomFields) != 0 {
			t.Fatalf("null custom_fields left %v", cleared.CustomFields)
		}
	})
}

func TestGetPersonExtended(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		key := env.Key(env.NewAccount())
		for _, f := range [][2]string{{"n", "int"}, {"price", "money"}, {"ok", "bool"}, {"colors", "list"}, {"born", "date"},
			{"nick", "str"}, {"unset_n", "int"}, {"unset_ok", "bool"}, {"unset_colors", "list"}, {"unset_born", "date"}, {"unset_nick", "unicode"}} {
			createField(env, key, map[string]any{"collection": "Person", "data_type": f[1], "key": f[0]})
		}
		vip := createTag(env, key, "vip", "person")
		p := upsertPerson(env, key, map[string]any{"external_id": "ext", "first_name": "Ada", "last_name": "Lovelace", "email": "ada@x.test",
			"custom_fields": map[string]any{"n": 5, "price": "19.90", "ok": false, "colors": []string{"a"}, "born": "1815-12-10", "nick": "A"}}, 201)
		env.Post(key, "/persons/"+p.ID+"/tags", map[string]any{"tag_ids": []string{vip.ID}}).Want(200)

		env.Clock.Advance(time.Hour)
		x := env.Get(key, "/persons/"+p.ID+"?extended=true").Want(200).Map()
		wantKeys := "0_person_url,address,age,companies,custom_data,custom_fields,date_created,date_last_seen,edu,email," +
			"email_opt_out,ethnicity,external_id,first_name,id,income,is_archived,language,last_name,name,occupation,phone," +
			"pseudonym,tag_ids,tags,upsert_result"
		if keys := strings.Join(slices.Sorted(maps.Keys(x)), ","); keys != wantKeys {
			t.Fatalf("extended keys %s", keys)
		}
		addr := x["address"].(map[string]any)
		if len(addr) != 17 {
			t.Fatalf("address has %d keys", len(addr))
		}
		for k, v := range addr {
			if v != nil {
				t.Fatalf("address %s = %v, want null", k, v)
			}
		}
		for _, k := range []string{"language", "pseudonym", "occupation", "age", "ethnicity", "income", "edu", "phone"} {
			if x[k] != nil {
				t.Fatalf("%s = %v, want null", k, x[k])
			}
		}
		if x["name"] != "Ada Lovelace" || x["0_person_url"] != "https://pds.test/persons/"+p.ID || x["upsert_result"] != "updated" ||
			x["email_opt_out"] != false || x["is_archived"] != false || len(x["companies"].([]any)) != 0 ||
			!slices.Equal(anyStrings(x["tags"]), []string{"vip"}) || !slices.Equal(anyStrings(x["tag_ids"]), []string{vip.ID}) {
			t.Fatalf("extended %v", x)
		}
		if cf := x["custom_fields"].(map[string]any); cf["n"] != "5" || cf["ok"] != "false" || cf["colors"] != `["a"]` || len(cf) != 6 {
			t.Fatalf("custom_fields %v", cf)
		}
		cd := x["custom_data"].(map[string]any)
		wantData := map[string]any{"n": 5.0, "price": 19.9, "ok": false, "colors": []any{"a"}, "born": "1815-12-10", "nick": "A",
			"unset_n": 0.0, "unset_ok": false, "unset_colors": []any{}, "unset_born": nowText(env), "unset_nick": ""}
		if len(cd) != len(wantData) {
			t.Fatalf("custom_data %v", cd)
		}
		for k, v := range wantData {
			if !equalJSON(cd[k], v) {
				t.Fatalf("custom_data[%s] = %#v, want %#v", k, cd[k], v)
			}
		}
		// The placeholder of an unset date is the render time.
		env.Clock.Advance(time.Second)
		if again := env.Get(key, "/persons/"+p.ID+"?extended=true").Want(200).Map(); again["custom_data"].(map[string]any)["unset_born"] != nowText(env) {
			t.Fatal("the date placeholder is not re-evaluated on each render")
		}

		compact := env.Get(key, "/persons/"+p.ID+"?extended=false").Want(200).Map()
		if _, extended := compact["custom_data"]; extended || len(compact) != 10 {
			t.Fatalf("extended=false: %v", compact)
		}
		wantInvalid(t, env.Get(key, "/persons/"+p.ID+"?extended=yes").Want(400).Problem(), "extended")

		for _, tc := range []struct {
			body map[string]any
			name any
		}{
			{map[string]any{"first_name": "Ada"}, "Ada"},
			{map[string]any{"last_name": "Byron"}, "Byron"},
			{map[string]any{}, nil},
		} {
			q := upsertPerson(env, key, tc.body, 201)
			if got := env.Get(key, "/persons/"+q.ID+"?extended=true").Want(200).Map(); got["name"] != tc.name || got["upsert_result"] != "created" {
				t.Fatalf("name of %v: %v (%v)", tc.body, got["name"], got["upsert_result"])
			}
		}
		other := env.Key(env.NewAccount())
		wantNotFound(t, env.Get(other, "/persons/"+p.ID+"?extended=true"), "person", p.ID)
	})
}

func anyStrings(v any) []string {
	out := []string{}
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func equalJSON(a, b any) bool {
	as, aok := a.([]any)
	bs, bok := b.([]any)
	if aok || bok {
		return aok && bok && slices.Equal(as, bs)
	}
	return a == b
}
