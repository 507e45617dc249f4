package httpapi_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/httpapi/apitest"
	"github.com/pds-dev/pds/internal/testenv"
)

type fieldView struct {
	ID          string  `json:"id"`
	Collection  string  `json:"collection"`
	DataType    string  `json:"data_type"`
	Key         string  `json:"key"`
	Label       *string `json:"label"`
	Description *string `json:"description"`
	FormType    string  `json:"form_type"`
	IsDefault   bool    `json:"is_default"`
	IsReadOnly  bool    `json:"is_read_only"`
	DateCreated string  `json:"date_created"`
}

func createField(env *apitest.Env, key string, body map[string]any) fieldView {
	env.T.Helper()
	var f fieldView
	env.Post(key, "/custom-fields", body).Want(201).JSON(&f)
	return f
}

func fieldBody(collection, key string) map[string]any {
	return map[string]any{"collection": collection, "data_type": "str", "key": key}
}

func fieldIDs(fields []fieldView) string {
	ids := make([]string, len(fields))
	for i, f := range fields {
		ids[i] = f.ID
	}
	return strings.Join(ids, ",")
}

func TestCustomFieldsCreateGetList(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		key := env.Key(env.NewAccount())

		full := createField(env, key, map[string]any{"collection": "Person", "data_type": "int", "key": "shoe_size",
			"label": "Shoe size", "description": "EU sizes", "form_type": "number"})
		if !strings.HasPrefix(full.ID, "cf_") || full.Collection != "Person" || full.DataType != "int" || full.Key != "shoe_size" ||
			*full.Label != "Shoe size" || *full.Description != "EU sizes" || full.FormType != "number" || full.IsDefault || full.IsReadOnly ||
			full.DateCreated != "2026-11-21T10:00:00.000Z" {
			t.Fatalf("created %+v", full)
		}
		env.Clock.Advance(time.Second)
		bare := createField(env, key, fieldBody("Breadcrumb", "shoe_size"))
		if bare.FormType != "text" || bare.Label != nil || bare.Description != nil {
			t.Fatalf("defaults: %+v", bare)
		}
		env.Clock.Advance(time.Second)
		nullForm := createField(env, key, map[string]any{"collection": "Partner", "data_type": "money", "key": "fee", "form_type": nil, "label": nil})
		if nullForm.FormType != "text" || nullForm.Label != nil {
			t.Fatalf("null form_type and label: %+v", nullForm)
		}

		var got fieldView
		env.Get(key, "/custom-fields/"+full.ID).Want(200).JSON(&got)
		if got.ID != full.ID || *got.Label != "Shoe size" || got.FormType != "number" || got.DateCreated != full.DateCreated {
			t.Fatalf("get %+v", got)
		}
		all := listOf[fieldView](env, key, "/custom-fields")
		if fieldIDs(all.Items) != fieldIDs([]fieldView{full, bare, nullForm}) || all.Total != 3 {
			t.Fatalf("list %+v", all)
		}
		paged := listOf[fieldView](env, key, "/custom-fields?size=2&page=2")
		if fieldIDs(paged.Items) != nullForm.ID || paged.Total != 3 {
			t.Fatalf("page 2 of size 2: %+v", paged)
		}
		crumbs := listOf[fieldView](env, key, "/custom-fields?collection=Breadcrumb")
		if fieldIDs(crumbs.Items) != bare.ID || crumbs.Total != 1 {
			t.Fatalf("collection=Breadcrumb: %+v", crumbs)
		}
		for _, q := range []string{"collection=person", "collection=", "collection=Persons"} {
			wantInvalid(t, env.Get(key, "/custom-fields?"+q).Want(400).Problem(), "collection")
		}
	})
}

func TestCustomFieldsValidation(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		key := env.Key(env.NewAccount())

		// Keys count characters, not bytes.
		for _, k := range []string{"k", strings.Repeat("k", 255), strings.Repeat("é", 255), strings.Repeat("😀", 255)} {
			createField(env, key, fieldBody("Person", k))
		}
		for _, k := range []string{"", strings.Repeat("k", 256), strings.Repeat("é", 256)} {
			wantInvalid(t, env.Post(key, "/custom-fields", fieldBody("Person", k)).Want(400).Problem(), "/key")
		}
		wantInvalid(t, env.Post(key, "/custom-fields", map[string]any{}).Want(400).Problem(), "/collection", "/data_type", "/key")
		wantInvalid(t, env.Post(key, "/custom-fields", map[string]any{"collection": "person", "data_type": "string", "key": "x", "form_type": "select"}).
			Want(400).Problem(), "/collection", "/data_type", "/form_type")
		wantInvalid(t, env.Post(key, "/custom-fields", map[string]any{"collection": nil, "data_type": "str", "key": "x"}).Want(400).Problem(), "/collection")
		wantInvalid(t, env.Post(key, "/custom-fields", map[string]any{"collection": "Person", "data_type": "str", "key": 7}).Want(400).Problem(), "/key")
		for _, member := range []string{"is_read_only", "is_default"} {
			for _, v := range []any{true, false, nil} {
				body := fieldBody("Person", "flagged")
				body[member] = v
				wantInvalid(t, env.Post(key, "/custom-fields", body).Want(400).Problem(), "/"+member)
			}
		}
		env.Get(key, "/custom-fields?collection=Person&size=100").Want(200)
		if l := listOf[fieldView](env, key, "/custom-fields"); l.Total != 4 {
			t.Fatalf("refused creations left %d fields, want 4", l.Total)
		}

		f := createField(env, key, fieldBody("Person", "tier"))
		for body, pointer := range map[string]string{
			`{"key": "renamed"}`:         "/key",
			`{"collection": "Partner"}`:  "/collection",
			`{"data_type": "int"}`:       "/data_type",
			`{"is_read_only": true}`:     "/is_read_only",
			`{"form_type": "dropdown"}`:  "/form_type",
			`{"label": 5}`:               "/label",
			`{"description": ["a"]}`:     "/description",
			`{"form_type": "TEXT"}`:      "/form_type",
			`{"label": "ok", "id": "x"}`: "/id",
		} {
			wantInvalid(t, env.Patch(key, "/custom-fields/"+f.ID, body).Want(400).Problem(), pointer)
		}
		var got fieldView
		env.Get(key, "/custom-fields/"+f.ID).Want(200).JSON(&got)
		if got.Key != "tier" || got.Label != nil || got.FormType != "text" {
			t.Fatalf("refused updates changed the field: %+v", got)
		}
	})
}

func TestCustomFieldsKeyReservedAndLimit(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		cfg := apitest.DefaultConfig()
		cfg.CustomFieldLimit = 2
		env := apitest.New(t, eng, apitest.WithConfig(cfg))
		key := env.Key(env.NewAccount())

		held := createField(env, key, fieldBody("Person", "tier"))
		wantConflict(t, env.Post(key, "/custom-fields", fieldBody("Person", "tier")), held.ID)
		other := createField(env, key, fieldBody("Partner", "tier"))

		p := env.Post(key, "/custom-fields", fieldBody("Person", "third")).Want(422).Problem()
		if p.Limit == nil || *p.Limit != 2 || p.Current == nil || *p.Current != 2 || p.Detail == "" {
			t.Fatalf("422 %+v, want limit 2 current 2", p)
		}
		// A taken key is reported before the limit.
		wantConflict(t, env.Post(key, "/custom-fields", fieldBody("Person", "tier")), held.ID)

		env.Delete(key, "/custom-fields/"+held.ID).Want(204)
		// The archived field keeps its key reserved but no longer counts.
		wantConflict(t, env.Post(key, "/custom-fields", fieldBody("Person", "tier")), held.ID)
		createField(env, key, fieldBody("Person", "third"))
		env.Post(key, "/custom-fields", fieldBody("Person", "fourth")).Want(422)

		// The limit is per account.
		otherKey := env.Key(env.NewAccount())
		createField(env, otherKey, fieldBody("Person", "tier"))
		createField(env, otherKey, fieldBody("Person", "third"))
		env.Get(key, "/custom-fields/"+other.ID).Want(200)
	})
}

func TestCustomFieldsUpdateAndArchive(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		key := env.Key(env.NewAccount())
		f := createField(env, key, fieldBody("Person", "tier"))

		var got fieldView
		env.Patch(key, "/custom-fields/"+f.ID, map[string]any{"label": "Tier", "description": "Loyalty", "form_type": "textarea"}).Want(200).JSON(&got)
		if *got.Label != "Tier" || *got.Description != "Loyalty" || got.FormType != "textarea" || got.Key != "tier" || got.DateCreated != f.DateCreated {
			t.Fatalf("update: %+v", got)
		}
		env.Patch(key, "/custom-fields/"+f.ID, map[string]any{"description": nil}).Want(200).JSON(&got)
		if *got.Label != "Tier" || got.Description != nil || got.FormType != "textarea" {
			t.Fatalf("clear description: %+v", got)
		}
		env.Patch(key, "/custom-fields/"+f.ID, map[string]any{"label": nil, "form_type": nil}).Want(200).JSON(&got)
		if got.Label != nil || got.FormType != "text" {
			t.Fatalf("null label and form_type: %+v", got)
		}
		env.Patch(key, "/custom-fields/"+f.ID, map[string]any{}).Want(200)

		env.Delete(key, "/custom-fields/"+f.ID).Want(204)
		wantNotFound(t, env.Get(key, "/custom-fields/"+f.ID), "custom field", f.ID)
		wantNotFound(t, env.Patch(key, "/custom-fields/"+f.ID, map[string]any{"label": "x"}), "custom field", f.ID)
		wantNotFound(t, env.Delete(key, "/custom-fields/"+f.ID), "custom field", f.ID)
		if l := listOf[fieldView](env, key, "/custom-fields"); l.Total != 0 || len(l.Items) != 0 {
			t.Fatalf("list after archive: %+v", l)
		}
	})
}

func TestCustomFieldsReadOnly(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		acc := env.NewAccount()
		key := env.Key(acc)
		label := "CRM score"
		ro := domain.CustomField{ID: "cf_crm_score", Collection: "Person", DataType: "int", Key: "crm_score", Label: &label,
			FormType: "number", IsReadOnly: true, IsDefault: true, DateCreated: domain.T(env.Clock.Now())}
		if err := env.Store.ImportCustomFields(context.Background(), acc, []domain.CustomField{ro}); err != nil {
			t.Fatal(err)
		}
		var got fieldView
		env.Get(key, "/custom-fields/"+ro.ID).Want(200).JSON(&got)
		if !got.IsReadOnly || !got.IsDefault || *got.Label != label {
			t.Fatalf("read-only field reads as %+v", got)
		}
		for _, res := range []*apitest.Response{
			env.Patch(key, "/custom-fields/"+ro.ID, map[string]any{"label": "mine now"}),
			env.Delete(key, "/custom-fields/"+ro.ID),
		} {
			if p := res.Want(403).Problem(); !strings.Contains(p.Detail, "read-only") || p.MissingScope != "" {
				t.Fatalf("403 %+v", p)
			}
		}
		env.Get(key, "/custom-fields/"+ro.ID).Want(200).JSON(&got)
		if *got.Label != label {
			t.Fatalf("a refused update changed the field: %+v", got)
		}
		if l := listOf[fieldView](env, key, "/custom-fields"); l.Total != 1 || !l.Items[0].IsReadOnly {
			t.Fatalf("list: %+v", l)
		}
		// Its key stays taken.
		wantConflict(t, env.Post(key, "/custom-fields", fieldBody("Person", "crm_score")), ro.ID)
	})
}

func TestCustomFieldsOfAnotherAccount(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		mine := env.Key(env.NewAccount())
		theirs := env.Key(env.NewAccount())
		f := createField(env, mine, fieldBody("Person", "tier"))

		wantNotFound(t, env.Get(theirs, "/custom-fields/"+f.ID), "custom field", f.ID)
		wantNotFound(t, env.Patch(theirs, "/custom-fields/"+f.ID, map[string]any{"label": "x"}), "custom field", f.ID)
		wantNotFound(t, env.Delete(theirs, "/custom-fields/"+f.ID), "custom field", f.ID)
		if l := listOf[fieldView](env, theirs, "/custom-fields"); l.Total != 0 || len(l.Items) != 0 {
			t.Fatalf("the second account lists %+v", l)
		}
		createField(env, theirs, fieldBody("Person", "tier"))
		var got fieldView
		env.Get(mine, "/custom-fields/"+f.ID).Want(200).JSON(&got)
		if got.Label != nil || got.Key != "tier" {
			t.Fatalf("the first account's field changed: %+v", got)
		}
	})
}
