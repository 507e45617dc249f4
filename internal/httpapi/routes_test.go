package httpapi_test

import (
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/pds-dev/pds/api"
	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/httpapi/apitest"
	"github.com/pds-dev/pds/internal/testenv"
)

var pathParam = regexp.MustCompile(`\{[^}]+\}`)

// TestEveryRouteNeedsItsScope calls every scoped route with a key that has
// every scope but the one the route needs, and expects a 403 naming it.
func TestEveryRouteNeedsItsScope(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		acc := env.NewAccount()
		checked := map[domain.Scope]int{}
		for _, r := range env.Server.Routes() {
			if r.Public || r.Scope == "" {
				continue
			}
			checked[r.Scope]++
			others := slices.DeleteFunc(slices.Clone(domain.AllScopes), func(s domain.Scope) bool { return s == r.Scope })
			key := env.Key(acc, others...)
			method, path, _ := strings.Cut(r.Pattern, " ")
			path = pathParam.ReplaceAllString(path, "x_1")
			req := apitest.Request{Method: method, Path: path, Key: key}
			if method == http.MethodPost || method == http.MethodPatch {
				req.Body = map[string]any{}
			}
			p := env.Do(req).Want(403).Problem()
			if p.MissingScope != string(r.Scope) || !strings.Contains(p.Detail, string(r.Scope)) {
				t.Errorf("%s: problem %+v does not name the missing scope %s", r.Pattern, p, r.Scope)
			}
		}
		for _, sc := range domain.AllScopes {
			// keys:write is the console's keys page's alone: no operation
			// of the API manages keys.
			if checked[sc] == 0 && sc != domain.ScopeKeysWrite {
				t.Errorf("no route requires %s", sc)
			}
		}
	})
}

// TestRoutesMatchTheContract holds the registered routes and the OpenAPI
// document to each other: same operations, same scopes, and every
// authenticated operation documents its error statuses.
func TestRoutesMatchTheContract(t *testing.T) {
	t.Parallel()
	doc, err := apitest.Document()
	if err != nil {
		t.Fatal(err)
	}
	env := apitest.New(t, testenv.SQLite)
	registered := map[string]bool{}
	for _, r := range env.Server.Routes() {
		registered[r.Pattern] = true
		method, path, _ := strings.Cut(r.Pattern, " ")
		item := doc.Paths.Find(path)
		var op *openapi3.Operation
		if item != nil {
			op = item.GetOperation(method)
		}
		if op == nil {
			t.Errorf("route %s is not in api/openapi.yaml", r.Pattern)
			continue
		}
		scope, _ := op.Extensions["x-scope"].(string)
		if scope != string(r.Scope) {
			t.Errorf("%s: x-scope %q in the contract, %q in the code", r.Pattern, scope, r.Scope)
		}
		// The server takes the query parameters the contract declares, read
		// from the document by api.QueryParameters.
		var declared []string
		for _, p := range op.Parameters {
			if p.Value.In == openapi3.ParameterInQuery {
				declared = append(declared, p.Value.Name)
			}
		}
		if taken, _ := api.QueryParameters(method, path); !slices.Equal(taken, declared) {
			t.Errorf("%s: the server takes the query parameters %q, the contract declares %q", r.Pattern, taken, declared)
		}
		// Every route reads its query string, and one that does not parse is a 400.
		want := []string{"400"}
		if !r.Public {
			// 429 too for GET /me, which is not counted against its key:
			// an address that failed too often is refused before its key is read.
			want = append(want, "401", "429", "500")
			if r.Scope != "" {
				want = append(want, "403")
			}
		}
		if op.RequestBody != nil {
			want = append(want, "413", "415")
		}
		for _, status := range want {
			if op.Responses.Value(status) == nil {
				t.Errorf("%s: the contract does not document status %s", r.Pattern, status)
			}
		}
	}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			if !registered[method+" "+path] {
				t.Errorf("the contract has %s %s but no route serves it", method, path)
			}
		}
	}
}

func TestUnknownRouteAndMethod(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, testenv.SQLite)
	p := env.Get("", "/no-such-thing").Want(404).Problem()
	if !strings.Contains(p.Detail, "/no-such-thing") {
		t.Errorf("404 detail %q does not name the path", p.Detail)
	}
	res := env.Delete("", "/me").Want(405)
	if res.Header.Get("Allow") == "" {
		t.Error("405 without Allow")
	}
	res.Problem()
}

func TestOperationalEndpoints(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, testenv.SQLite)
	env.Get("", "/healthz").Want(200)
	env.Get("", "/readyz").Want(200)
	var doc map[string]any
	env.Get("", "/openapi.json").Want(200).JSON(&doc)
	if doc["openapi"] != "3.1.0" || doc["info"].(map[string]any)["version"] != "0.0.0" {
		t.Fatalf("openapi.json: openapi %v, info %v", doc["openapi"], doc["info"])
	}
	env.Get("", "/docs").Want(200) // docs_test.go looks at the page
}

// TestTextNoEngineCanHoldIsRefusedEverywhere: a NUL character or bytes that
// are not UTF-8, in a path id, a query parameter or a body member, get a
// clear 404 or 400 on every route and on both engines, never a database error.
func TestTextNoEngineCanHoldIsRefusedEverywhere(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		key := env.Key(env.NewAccount())
		for _, r := range env.Server.Routes() {
			if r.Public || r.Pattern == "GET /me" {
				continue
			}
			method, path, _ := strings.Cut(r.Pattern, " ")
			var body any
			if method == http.MethodPost || method == http.MethodPatch {
				body = `{"name": "a\u0000b"}`
			}
			if strings.Contains(path, "{") {
				for _, bad := range []string{"%00", "x%ffy"} {
					res := env.Do(apitest.Request{Method: method, Path: pathParam.ReplaceAllString(path, bad), Key: key, Body: body})
					res.Want(404).Problem()
				}
				continue
			}
			if method == http.MethodGet {
				p := env.Do(apitest.Request{Method: method, Path: path + "?page=1&q=a%00", Key: key}).Want(400).Problem()
				if len(p.Errors) != 1 || p.Errors[0].Parameter != "q" {
					t.Errorf("%s with a NUL in q: %+v", r.Pattern, p)
				}
				continue
			}
			p := env.Do(apitest.Request{Method: method, Path: path, Key: key, Body: body}).Want(400).Problem()
			if len(p.Errors) != 1 || p.Errors[0].Pointer != "/name" {
				t.Errorf("%s with a NUL in /name: %+v", r.Pattern, p)
			}
		}
	})
}

// TestUnknownQueryParameters: every route, public or not, refuses a query
// parameter its operation does not take, with a 400 naming it, before it
// reads or writes anything: a misspelt filter is never an unfiltered page.
func TestUnknownQueryParameters(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, testenv.SQLite)
	key := env.Key(env.NewAccount())
	for _, r := range env.Server.Routes() {
		method, path, _ := strings.Cut(r.Pattern, " ")
		req := apitest.Request{Method: method, Path: pathParam.ReplaceAllString(path, "x_1") + "?zz_not_a_parameter=1"}
		if !r.Public {
			req.Key = key
		}
		if method == http.MethodPost || method == http.MethodPatch {
			req.Body = `{}`
		}
		p := env.Do(req).Want(400).Problem()
		if len(p.Errors) != 1 || p.Errors[0].Parameter != "zz_not_a_parameter" || !strings.Contains(p.Detail, "not a parameter of this operation") {
			t.Errorf("%s: %+v", r.Pattern, p)
		}
	}
}

// TestRepeatedQueryParameters: a parameter that takes one value is a 400 when
// repeated, on every list; tag_ids, a list, may be repeated.
func TestRepeatedQueryParameters(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, testenv.SQLite)
	key := env.Key(env.NewAccount())
	for _, path := range []string{"/tags?size=1&size=2", "/custom-fields?page=1&page=1", "/campaigns?size=5&size=5",
		"/persons?external_id=a&external_id=b", "/breadcrumbs?flavor=custom&flavor=custom", "/webhooks?page=1&page=2"} {
		p := env.Get(key, path).Want(400).Problem()
		if len(p.Errors) != 1 || p.Errors[0].Parameter == "" || !strings.Contains(p.Detail, "given once") {
			t.Errorf("%s: %+v", path, p)
		}
	}
	env.Get(key, "/persons?updated_since=2026-11-21T09:00:00Z&tag_ids=a&tag_ids=b").Want(200)
}
