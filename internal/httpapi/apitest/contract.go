package apitest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/pds-dev/pds/api"
)

type contract struct {
	doc    *openapi3.T
	router routers.Router
}

var loadContract = sync.OnceValues(func() (*contract, error) {
	openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("text/javascript", openapi3filter.PlainBodyDecoder)
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(api.YAML())
	if err != nil {
		return nil, fmt.Errorf("load api/openapi.yaml: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("api/openapi.yaml is not a valid OpenAPI document: %w", err)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, err
	}
	return &contract{doc: doc, router: router}, nil
})

// Document is the parsed contract.
func Document() (*openapi3.T, error) {
	c, err := loadContract()
	if err != nil {
		return nil, err
	}
	return c.doc, nil
}

// CheckResponse validates one response to method and rawPath (the path and
// query string as sent) against the contract, as Env.Do does, for tests that
// send their requests through a client of their own.
func CheckResponse(method, rawPath string, status int, header http.Header, body []byte) error {
	return checkResponse(method, rawPath, status, header, body)
}

// checkResponse validates one response against the operation the request
// matches in the contract. A request that matches no operation must have
// been answered with a problem document (unknown route, wrong method).
func checkResponse(method, rawPath string, status int, header http.Header, body []byte) error {
	c, err := loadContract()
	if err != nil {
		return err
	}
	u, err := url.Parse("http://localhost:8080" + rawPath)
	if err != nil {
		return err
	}
	req, err := http.NewRequest(method, u.String(), nil)
	if err != nil {
		return err
	}
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		if (status == http.StatusNotFound || status == http.StatusMethodNotAllowed) &&
			header.Get("Content-Type") == "application/problem+json" {
			return checkSchema(c, "Problem", body)
		}
		return fmt.Errorf("%s %s answered %d but the contract has no such operation", method, rawPath, status)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: req, PathParams: params, Route: route,
		},
		Status: status,
		Header: header,
		Body:   io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{
			IncludeResponseStatus: true,
			MultiError:            true,
		},
	}
	lines := header.Get("Content-Type") == ndjson
	if lines {
		// The validator knows no JSON-lines body: it checks the status and
		// the headers, and each line is checked against the schema of one.
		in.Options.ExcludeResponseBody = true
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return fmt.Errorf("%s %s -> %d does not match the contract: %v\nbody: %s", method, rawPath, status, err, body)
	}
	if err := checkKeptPrivate(route.Operation, header); err != nil {
		return fmt.Errorf("%s %s -> %d: %v", method, rawPath, status, err)
	}
	if lines {
		return checkLines(route, status, body)
	}
	return nil
}

// checkKeptPrivate holds every answer to an operation that needs a key to
// what the contract promises of it: Cache-Control: no-store, since it may
// hold personal data or a webhook's full secret, which no cache may keep,
// and X-Content-Type-Options: nosniff, so that no browser reads it as
// anything but its declared type. Operations that declare security: []
// (the operational endpoints) set their own caching.
func checkKeptPrivate(op *openapi3.Operation, header http.Header) error {
	if op.Security != nil && len(*op.Security) == 0 {
		return nil
	}
	if got := header.Get("Cache-Control"); got != "no-store" {
		return fmt.Errorf("Cache-Control is %q, want no-store on every answer to an operation that needs a key", got)
	}
	if got := header.Get("X-Content-Type-Options"); got != "nosniff" {
		return fmt.Errorf("X-Content-Type-Options is %q, want nosniff on every answer to an operation that needs a key", got)
	}
	return nil
}

// ndjson is the media type of a response of JSON lines.
const ndjson = "application/x-ndjson"

// checkLines checks a JSON-lines body against the contract's response of
// that media type.
func checkLines(route *routers.Route, status int, body []byte) error {
	res := route.Operation.Responses.Status(status)
	if res == nil || res.Value == nil || res.Value.Content.Get(ndjson) == nil {
		return fmt.Errorf("%s %s -> %d: the contract has no %s response", route.Method, route.Path, status, ndjson)
	}
	if err := CheckLines(res.Value.Content.Get(ndjson), body); err != nil {
		return fmt.Errorf("%s %s: %v", route.Method, route.Path, err)
	}
	return nil
}

// CheckLines checks a JSON-lines body (a response's or an example's) against
// its media type in the contract, whose schema is a string with a
// contentSchema: an array whose items describe one line. The body is empty
// or ends with a newline, and every line is JSON matching the items.
func CheckLines(media *openapi3.MediaType, body []byte) error {
	var line *openapi3.Schema
	if s := media.Schema; s != nil && s.Value != nil {
		if cs := s.Value.ContentSchema; cs != nil && cs.Value != nil && cs.Value.Items != nil {
			line = cs.Value.Items.Value
		}
	}
	if line == nil {
		return fmt.Errorf("the contract describes no line of %s: its schema needs a contentSchema with items", ndjson)
	}
	if len(body) > 0 && body[len(body)-1] != '\n' {
		return fmt.Errorf("the last line does not end with a newline")
	}
	for i, l := range bytes.Split(bytes.TrimSuffix(body, []byte("\n")), []byte("\n")) {
		if len(body) == 0 {
			break
		}
		var v any
		if err := jsonUnmarshal(l, &v); err != nil {
			return fmt.Errorf("line %d is not JSON: %v", i+1, err)
		}
		if err := line.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
			return fmt.Errorf("line %d does not match the contract: %v\nline: %s", i+1, err, l)
		}
	}
	return nil
}

func checkSchema(c *contract, name string, body []byte) error {
	ref := c.doc.Components.Schemas[name]
	if ref == nil {
		return fmt.Errorf("no schema %s", name)
	}
	var v any
	if err := jsonUnmarshal(body, &v); err != nil {
		return fmt.Errorf("body is not JSON: %v", err)
	}
	return ref.Value.VisitJSON(v, openapi3.EnableJSONSchema2020())
}
