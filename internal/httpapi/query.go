package httpapi

import (
	"context"
	"net/http"
	"net/url"

	"github.com/pds-dev/pds/internal/params"
)

type queryKey struct{}

// query is the request's query string as checkRequest parsed it, the one
// strict reading (parseQuery) that handlers use. url.URL's own Query method
// drops what it cannot parse, and would turn a malformed filter into no
// filter.
func query(r *http.Request) url.Values {
	q, _ := r.Context().Value(queryKey{}).(url.Values)
	return q
}

func withQuery(ctx context.Context, q url.Values) context.Context {
	return context.WithValue(ctx, queryKey{}, q)
}

// parseQuery reads a query string strictly (params.Parse).
func parseQuery(raw string) (url.Values, error) { return params.Parse(raw) }

// printable makes a name fit to quote back in a JSON problem document.
func printable(s string) string { return params.Printable(s) }
