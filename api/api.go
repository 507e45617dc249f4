// Package api embeds the OpenAPI document, the contract of the service.
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
