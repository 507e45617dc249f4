package httpapi_test

import (
	"strings"
	"testing"

	"github.com/pds-dev/pds/internal/httpapi/apitest"
	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/internal/webhook"
)

// TestStrictInput: input that does not parse is refused with a problem
// document naming the cause, never half-read (a dropped filter, a replaced
// byte, a member silently taken from another spelling), and it changes
// nothing. One row per finding of the strict-input probe, on both engines.
func TestStrictInput(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := newWebhookEnv(t, eng, webhook.Settings{Resolver: fakeResolver{"hooks.example": {"93.184.215.14"}}})
		acc := env.NewAccount()
		key := env.Key(acc)
		p := upsertPerson(env.Env, key, map[string]any{"external_id": "strict-1"}, 201)
		env.Post(key, "/breadcrumbs", map[string]any{"flavor": "custom", "person_id": p.ID}).Want(201)
		tag := createTag(env.Env, key, "vip", "person")
		manyParams := "/persons?updated_since=" + nowText(env.Env) + strings.Repeat("&tag_ids="+tag.ID, 10001)

		cases := []struct {
			name        string
			method      string
			path        string
			contentType string
			body        string
			status      int
			names       string // the parameter or member the problem must name
		}{
			{"raw ; after a filter", "GET", "/breadcrumbs?person_id=" + p.ID + ";", "", "", 400, "person_id"},
			{"raw ; inside a filter", "GET", "/tags?context=bogus;x", "", "", 400, "context"},
			{"raw ; after size", "GET", "/tags?size=1;", "", "", 400, "size"},
			{"bad percent-escape", "GET", "/breadcrumbs?person_id=" + p.ID + "%zz", "", "", 400, "person_id"},
			{"bad percent-escape in a name", "GET", "/tags?con%zztext=person", "", "", 400, "con%zztext"},
			{"more than 10,000 parameters", "GET", manyParams, "", "", 400, ""},
			{"misspelt window filter", "GET", "/persons?updated_since=" + nowText(env.Env) + "&tag_id=" + tag.ID, "", "", 400, "tag_id"},
			{"filter in another case", "GET", "/breadcrumbs?Person_Id=" + p.ID, "", "", 400, "Person_Id"},
			{"array brackets on tag_ids", "GET", "/persons?updated_since=" + nowText(env.Env) + "&tag_ids[]=" + tag.ID, "", "", 400, "tag_ids[]"},
			{"parameter of another operation", "GET", "/tags?collection=Person", "", "", 400, "collection"},
			{"parameter on a read by id", "GET", "/tags/" + tag.ID + "?extended=1", "", "", 400, "extended"},
			{"raw invalid UTF-8", "POST", "/persons", "", "{\"external_id\":\"s2\",\"first_name\":\"\xff\xfe\"}", 400, "/first_name"},
			{"escaped lone surrogate", "POST", "/persons", "", `{"external_id":"s3","first_name":"\ud800"}`, 400, "/first_name"},
			{"member twice", "POST", "/persons", "", `{"external_id":"s4","first_name":"A","first_name":"B"}`, 400, "/first_name"},
			{"member twice inside custom_fields", "POST", "/persons", "", `{"external_id":"s5","custom_fields":{"a":"1","a":"2"}}`, 400, "/custom_fields/a"},
			{"member name in another case", "POST", "/persons", "", `{"external_id":"s6","First_Name":"A"}`, 400, "/First_Name"},
			{"charset latin1", "POST", "/persons", "application/json; charset=latin1", `{"external_id":"s7"}`, 415, ""},
			{"tag name of spaces", "POST", "/tags", "", `{"name":"   ","context":"person"}`, 400, "/name"},
			{"tag renamed to spaces", "PATCH", "/tags/" + tag.ID, "", `{"name":" \t "}`, 400, "/name"},
			{"custom field key of spaces", "POST", "/custom-fields", "", `{"collection":"Person","data_type":"str","key":"  "}`, 400, "/key"},
			{"webhook name of spaces", "POST", "/webhooks", "", `{"name":"  ","target_url":"https://hooks.example/pds","events":["person.created"]}`, 400, "/name"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				req := apitest.Request{Method: c.method, Path: c.path, Key: key, ContentType: c.contentType}
				if c.body != "" {
					req.Body = c.body
				}
				prob := env.Do(req).Want(c.status).Problem()
				if c.status == 400 && c.names != "" {
					wantInvalid(t, prob, c.names)
				}
			})
		}

		// Nothing was stored: the account holds the one person, breadcrumb,
		// tag and no field or webhook.
		for path, want := range map[string]int{
			"/persons?updated_since=" + nowText(env.Env): 1, "/breadcrumbs": 1, "/tags": 1, "/custom-fields": 0, "/webhooks": 0,
		} {
			if got := listOf[map[string]any](env.Env, key, path).Total; got != want {
				t.Errorf("%s holds %d, want %d", path, got, want)
			}
		}
		if got := getPerson(env.Env, key, p.ID); got.FirstName != nil {
			t.Errorf("person changed: %+v", got)
		}
		// What parses is still read: the filter applies.
		if got := listOf[map[string]any](env.Env, key, "/breadcrumbs?person_id="+p.ID+"%3B").Total; got != 0 {
			t.Errorf("an encoded ; is part of the value; got %d breadcrumbs", got)
		}
	})
}
