package api

import (
	"encoding/json"
	"strings"
	"sync"
)

// QueryParameters returns the query parameters the contract declares for
// the operation at method and path (a path as the document writes it, such
// as /persons/{person_id}), in the document's order, and whether the
// document holds that operation at all.
func QueryParameters(method, path string) ([]string, bool) {
	ops := queryParameters()
	names, ok := ops[strings.ToUpper(method)+" "+path]
	return names, ok
}

// parameter is an OpenAPI parameter object, or a reference to one in
// components.parameters.
type parameter struct {
	Ref  string `json:"$ref"`
	Name string `json:"name"`
	In   string `json:"in"`
}

// operations are the members of a path item that are operations.
var operations = map[string]bool{"get": true, "put": true, "post": true, "delete": true,
	"options": true, "head": true, "patch": true, "trace": true}

var queryParameters = sync.OnceValue(func() map[string][]string {
	var doc struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Parameters map[string]parameter `json:"parameters"`
		} `json:"components"`
	}
	if err := json.Unmarshal(JSON(), &doc); err != nil {
		panic("api/openapi.yaml does not hold an OpenAPI document: " + err.Error())
	}
	resolve := func(p parameter) parameter {
		if name, ok := strings.CutPrefix(p.Ref, "#/components/parameters/"); ok {
			return doc.Components.Parameters[name]
		}
		return p
	}
	decode := func(raw json.RawMessage) []parameter {
		var ps []parameter
		if raw != nil {
			if err := json.Unmarshal(raw, &ps); err != nil {
				panic("api/openapi.yaml: parameters: " + err.Error())
			}
		}
		return ps
	}
	ops := map[string][]string{}
	for path, item := range doc.Paths {
		shared := decode(item["parameters"])
		for method, raw := range item {
			if !operations[method] {
				continue // parameters, summary, description, servers
			}
			var op struct {
				Parameters json.RawMessage `json:"parameters"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				panic("api/openapi.yaml: " + method + " " + path + ": " + err.Error())
			}
			names := []string{}
			for _, p := range append(shared, decode(op.Parameters)...) {
				if p = resolve(p); p.In == "query" {
					names = append(names, p.Name)
				}
			}
			ops[strings.ToUpper(method)+" "+path] = names
		}
	}
	return ops
})
