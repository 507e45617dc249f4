package httpapi_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/pds-dev/pds/api"
	"github.com/pds-dev/pds/internal/httpapi/apitest"
)

// TestEveryOperationHasValidExamples holds the contract to its examples,
// which the reference page and generated clients show: every operation has
// an example of its request body (when it takes one) and of every success
// response with a body, and every example in the document (requests,
// responses, shared responses, schemas) validates against its schema.
func TestEveryOperationHasValidExamples(t *testing.T) {
	t.Parallel()
	// Loaded apart from apitest.Document, whose validation stops at the
	// first bad example: this test reports every one.
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(api.YAML())
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(loader.Context, openapi3.DisableExamplesValidation()); err != nil {
		t.Fatal(err)
	}
	type operation struct {
		name string // "GET /tags (listTags)"
		op   *openapi3.Operation
	}
	var ops []operation
	add := func(prefix string, items map[string]*openapi3.PathItem) {
		for path, item := range items {
			for method, op := range item.Operations() {
				ops = append(ops, operation{fmt.Sprintf("%s%s %s (%s)", prefix, method, path, op.OperationID), op})
			}
		}
	}
	add("", doc.Paths.Map())
	add("webhook ", doc.Webhooks)
	if len(ops) == 0 {
		t.Fatal("no operations found")
	}
	slices.SortFunc(ops, func(a, b operation) int { return strings.Compare(a.name, b.name) })

	for _, o := range ops {
		if rb := o.op.RequestBody; rb != nil && rb.Value != nil {
			for ct, media := range rb.Value.Content {
				where := o.name + " request " + ct
				if !hasExample(media) {
					t.Errorf("%s: no example", where)
				}
				checkExamples(t, where, media, openapi3.VisitAsRequest())
			}
		}
		for status, res := range o.op.Responses.Map() {
			if res.Value == nil || res.Ref != "" {
				continue // a shared response, checked once below
			}
			for ct, media := range res.Value.Content {
				where := o.name + " " + status + " " + ct
				if strings.HasPrefix(status, "2") && !hasExample(media) {
					t.Errorf("%s: no example", where)
				}
				checkExamples(t, where, media, openapi3.VisitAsResponse())
				if ct == "application/x-ndjson" {
					checkLineExamples(t, where, media)
				}
			}
		}
	}
	for name, res := range doc.Components.Responses {
		for ct, media := range res.Value.Content {
			checkExamples(t, "components.responses."+name+" "+ct, media, openapi3.VisitAsResponse())
		}
	}
	for name, s := range doc.Components.Schemas {
		for i, ex := range s.Value.Examples {
			if err := s.Value.VisitJSON(ex, openapi3.EnableJSONSchema2020(), openapi3.MultiErrors()); err != nil {
				t.Errorf("components.schemas.%s example %d does not match the schema: %v", name, i, err)
			}
		}
	}
}

// checkLineExamples holds each example of a JSON-lines body, a string, to
// the schema of one line, as apitest holds the responses.
func checkLineExamples(t *testing.T, where string, media *openapi3.MediaType) {
	t.Helper()
	examples := map[string]any{"example": media.Example}
	for name, ex := range media.Examples {
		if ex.Value != nil {
			examples["examples."+name] = ex.Value.Value
		}
	}
	for name, v := range examples {
		if v == nil && name == "example" {
			continue
		}
		text, ok := v.(string)
		if !ok {
			t.Errorf("%s: %s is not a string of JSON lines", where, name)
			continue
		}
		if err := apitest.CheckLines(media, []byte(text)); err != nil {
			t.Errorf("%s: %s: %v", where, name, err)
		}
	}
}

func hasExample(media *openapi3.MediaType) bool {
	return media.Example != nil || len(media.Examples) > 0
}

// checkExamples validates the example and each named example of a media
// type against its schema.
func checkExamples(t *testing.T, where string, media *openapi3.MediaType, as openapi3.SchemaValidationOption) {
	t.Helper()
	examples := map[string]any{}
	if media.Example != nil {
		examples["example"] = media.Example
	}
	for name, ex := range media.Examples {
		if ex.Value != nil {
			examples["examples."+name] = ex.Value.Value
		}
	}
	if len(examples) == 0 {
		return
	}
	if media.Schema == nil || media.Schema.Value == nil {
		t.Errorf("%s: an example without a schema", where)
		return
	}
	for name, v := range examples {
		if err := media.Schema.Value.VisitJSON(v, as, openapi3.EnableJSONSchema2020(), openapi3.MultiErrors()); err != nil {
			t.Errorf("%s: %s does not match the schema: %v", where, name, err)
		}
	}
}
