package httpapi_test

import (
	"bytes"
	"testing"

	"github.com/pds-dev/pds/internal/httpapi/apitest"
	"github.com/pds-dev/pds/internal/testenv"
)

// TestSuppressionIsNoOracleForABadBody: a body that is wrong for any
// identifier is refused for what is wrong with it, whether or not its
// identifiers are suppressed: the whole body is checked before any
// suppression or matching decision, so a key that may write persons but
// not read suppressions cannot tell a suppressed identifier by sending it
// with a bad member.
func TestSuppressionIsNoOracleForABadBody(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		acc := env.NewAccount()
		admin := env.Key(acc)
		env.Post(admin, "/custom-fields", map[string]any{"collection": "Person", "key": "score", "data_type": "int"}).Want(201)
		gone := upsertPerson(env, admin, map[string]any{"email": "gone@oracle.test", "external_id": "gone-ext"}, 201)
		env.Delete(admin, "/persons/"+gone.ID+"?suppress=true").Want(204)
		other := upsertPerson(env, admin, map[string]any{"external_id": "other-ext"}, 201)
		writer := env.Key(acc, "persons:write", "breadcrumbs:write")

		for _, tc := range []struct {
			name, method, path string
			body               func(email string) map[string]any
		}{
			{"upsert, unknown custom field", "POST", "/persons", func(e string) map[string]any {
				return map[string]any{"email": e, "custom_fields": map[string]any{"nosuch": "1"}}
			}},
			{"upsert, a value of the wrong type", "POST", "/persons", func(e string) map[string]any {
				return map[string]any{"email": e, "custom_fields": map[string]any{"score": "many"}}
			}},
			{"update, unknown custom field", "PATCH", "/persons/" + other.ID, func(e string) map[string]any {
				return map[string]any{"email": e, "custom_fields": map[string]any{"nosuch": "1"}}
			}},
			{"batch item, unknown custom field", "POST", "/persons/batch", func(e string) map[string]any {
				return map[string]any{"persons": []map[string]any{{"email": e, "custom_fields": map[string]any{"nosuch": "1"}}}}
			}},
			{"breadcrumb, unknown campaign", "POST", "/breadcrumbs", func(e string) map[string]any {
				return map[string]any{"flavor": "page_view", "email": e, "campaign_id": "cmp_0000000000000000000000"}
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				suppressed := env.Do(apitest.Request{Method: tc.method, Path: tc.path, Key: writer, Body: tc.body("gone@oracle.test")})
				fresh := env.Do(apitest.Request{Method: tc.method, Path: tc.path, Key: writer, Body: tc.body("fresh@oracle.test")})
				if suppressed.Status != fresh.Status || !bytes.Equal(statusesOf(t, suppressed), statusesOf(t, fresh)) {
					t.Fatalf("a suppressed email answers %d %s, another %d %s", suppressed.Status, suppressed.Body, fresh.Status, fresh.Body)
				}
			})
		}
	})
}

// statusesOf is a batch answer's item statuses, or the status of any other.
func statusesOf(t *testing.T, r *apitest.Response) []byte {
	t.Helper()
	var batch struct {
		Results []struct {
			Status int `json:"status"`
		} `json:"results"`
	}
	if r.Status == 200 {
		r.JSON(&batch)
	}
	if len(batch.Results) == 0 {
		return []byte{byte(r.Status)}
	}
	out := []byte{}
	for _, res := range batch.Results {
		out = append(out, byte(res.Status))
	}
	return out
}
