package httpapi

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/pds-dev/pds/api"
	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/params"
)

// PostgreSQL cannot hold a NUL character or bytes that are not UTF-8 in
// text, and SQLite would store what PostgreSQL refuses; so such input is
// refused at the door, the same on both engines, for every operation.

func storable(s string) bool { return params.Storable(s) }

// listParams are the query parameters that may be repeated, one value each.
var listParams = map[string]bool{"tag_ids": true}

// checkRequest refuses, before any handler runs, path values and query
// parameters that no engine can hold (in the path they name nothing, 404;
// in the query they are bad input, 400), a query string that does not parse,
// a query parameter the operation does not take (declared: its parameters
// in the contract), and a query parameter given more than once where one
// value is expected. A misspelt filter would otherwise be no filter, and
// which of two values the client meant would be a guess; either would hide
// the client's bug. It returns the parsed query for query(r).
func checkRequest(r *http.Request, takes queryParams) (url.Values, error) {
	if !storable(r.URL.Path) {
		return nil, &domain.NotFoundError{Detail: "No resource exists at this path: it holds a NUL character or bytes that are not UTF-8."}
	}
	q, err := parseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, err
	}
	// In name order, so that a query with several faults is always answered
	// with the same one; text no engine can hold first, whatever its name.
	names := slices.Sorted(maps.Keys(q))
	for _, name := range names {
		if !storable(name) {
			return nil, domain.ParamError(printable(name), "Query parameter names must be UTF-8 text without NUL characters.")
		}
		for _, v := range q[name] {
			if !storable(v) {
				return nil, domain.ParamError(name, "%s must be UTF-8 text without NUL characters.", name)
			}
		}
	}
	for _, name := range names {
		if err := takes.check(name); err != nil {
			return nil, err
		}
		if n := len(q[name]); n > 1 && !listParams[name] {
			return nil, domain.ParamError(name, "%s may be given once; it was given %d times.", name, n)
		}
	}
	return q, nil
}

// queryParams are the query parameters an operation takes: those its
// contract declares. A route the contract lacks takes any
// (TestRoutesMatchTheContract allows none but the tests' own).
type queryParams struct {
	declared []string
	any      bool
}

// takesQuery is what the route pattern ("GET /persons") takes.
func takesQuery(pattern string) queryParams {
	method, path, _ := strings.Cut(pattern, " ")
	declared, ok := api.QueryParameters(method, path)
	return queryParams{declared: declared, any: !ok}
}

// check refuses a parameter the operation does not take, listing those it
// does.
func (p queryParams) check(name string) error {
	switch {
	case p.any || slices.Contains(p.declared, name):
		return nil
	case len(p.declared) == 0:
		return domain.ParamError(name, "%s is not a parameter of this operation, which takes no query parameters.", name)
	default:
		return domain.ParamError(name, "%s is not a parameter of this operation; it takes %s.", name, strings.Join(p.declared, ", "))
	}
}

// nulPointer returns the JSON pointer of the first string (member name or
// value) in body holding a NUL character, or "" when there is none. encoding/json
// already turns bytes that are not UTF-8 into U+FFFD, so NUL is the one
// character left to refuse.
func nulPointer(body []byte) string {
	if !bytes.Contains(body, []byte(`\u0000`)) {
		return ""
	}
	var v any
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	return findNUL(v, "")
}

func findNUL(v any, at string) string {
	switch v := v.(type) {
	case string:
		if strings.ContainsRune(v, 0) {
			return orRoot(at)
		}
	case []any:
		for i, e := range v {
			if p := findNUL(e, at+"/"+strconv.Itoa(i)); p != "" {
				return p
			}
		}
	case map[string]any:
		for k, e := range v {
			p := at + "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
			if strings.ContainsRune(k, 0) {
				return p
			}
			if p := findNUL(e, p); p != "" {
				return p
			}
		}
	}
	return ""
}

func orRoot(p string) string {
	if p == "" {
		return "/"
	}
	return p
}
