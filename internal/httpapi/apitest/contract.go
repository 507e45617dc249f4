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
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return fmt.Errorf("%s %s -> %d does not match the contract: %v\nbody: %s", method, rawPath, status, err, body)
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
