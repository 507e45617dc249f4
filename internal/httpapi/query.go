package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/pds-dev/pds/internal/domain"
)

// maxQueryParams bounds the parameters of one query string. The longest
// legitimate query (tag_ids at its bound of 100 plus the page and filters)
// is far below it.
const maxQueryParams = 1000

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

// parseQuery reads a query string strictly: a pair holding a raw ';', a
// malformed percent-escape, or more than maxQueryParams pairs is a 400 that
// names the parameter, never a value silently dropped. url.ParseQuery
// refuses the same input but does not say where, which a client needs.
func parseQuery(raw string) (url.Values, error) {
	q := url.Values{}
	if raw == "" {
		return q, nil
	}
	if n := strings.Count(raw, "&") + 1; n > maxQueryParams {
		return nil, domain.ParamError("", "The query string holds %d parameters; at most %d are accepted.", n, maxQueryParams)
	}
	for pair := range strings.SplitSeq(raw, "&") {
		if pair == "" {
			continue
		}
		rawName, rawValue, _ := strings.Cut(pair, "=")
		name, err := url.QueryUnescape(rawName)
		if err != nil {
			return nil, domain.ParamError(printable(rawName), "The query parameter name %q holds a malformed percent-escape; encode %% as %%25.", printable(rawName))
		}
		if strings.Contains(pair, ";") {
			return nil, domain.ParamError(printable(name), "The query parameter %s holds a raw ';'; separate parameters with '&' and encode ';' as %%3B.", printable(name))
		}
		value, err := url.QueryUnescape(rawValue)
		if err != nil {
			return nil, domain.ParamError(printable(name), "The query parameter %s holds a malformed percent-escape; encode %% as %%25.", printable(name))
		}
		q[name] = append(q[name], value)
	}
	return q, nil
}

// printable makes a name fit to quote back in a JSON problem document.
func printable(s string) string {
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", "?"), "?")
}
