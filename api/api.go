// Package api embeds the OpenAPI document, the contract of the service:
// openapi.yaml, written by hand, served as /openapi.json, read by the tests
// (every answer of every HTTP test is validated against it; QueryParameters
// gives each operation's query parameters to the API's strict parsing) and
// the source of pkg/client. It also serves the /docs page (docs.go).
//
// The document is written so that code generators given it with their
// default settings produce code that builds: CI (.ci/generators) builds what
// oapi-codegen, ogen and openapi-typescript make of it. So a value of
// several JSON types is a oneOf of one schema per type, not a list of types;
// a nullable enumeration is a oneOf of its $ref and {type: "null"}; the
// webhooks write DeliveryBody out rather than $ref it; and the export's JSON
// lines are a string with a contentSchema.
package api

import (
	_ "embed"
	"sync"

	"sigs.k8s.io/yaml"
)

//go:embed openapi.yaml
var spec []byte

// YAML is the document as written.
func YAML() []byte { return spec }

var asJSON = sync.OnceValue(func() []byte {
	b, err := yaml.YAMLToJSON(spec)
	if err != nil {
		panic("api/openapi.yaml is not valid YAML: " + err.Error())
	}
	return b
})

// JSON is the document as JSON, converted once.
func JSON() []byte { return asJSON() }
