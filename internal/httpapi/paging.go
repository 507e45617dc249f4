package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

// Bounds of the page parameters (spec section 8).
const (
	defaultPageSize = 25
	maxPageSize     = 100
)

// parsePage reads page and size; outside their bounds is a 400, never a clamp.
func parsePage(r *http.Request) (domain.PageRequest, error) {
	q := query(r)
	p := domain.PageRequest{Page: 1, Size: defaultPageSize}
	if v := q.Get("page"); q.Has("page") {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return p, domain.ParamError("page", "page must be an integer of at least 1; got %q.", v)
		}
		p.Page = n
	}
	if v := q.Get("size"); q.Has("size") {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPageSize {
			return p, domain.ParamError("size", "size must be an integer from 1 to %d; got %q.", maxPageSize, v)
		}
		p.Size = n
	}
	return p, nil
}

// page builds the envelope; items is never null.
func page[T any](items []T, req domain.PageRequest, total int) domain.Page[T] {
	if items == nil {
		items = []T{}
	}
	return domain.Page[T]{Items: items, Page: req.Page, Size: req.Size, Total: total}
}

// parseTimeParam reads an RFC 3339 query time with "Z" or an offset.
func parseTimeParam(r *http.Request, name string) (*time.Time, error) {
	q := query(r)
	if !q.Has(name) {
		return nil, nil
	}
	v := q.Get(name)
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return nil, domain.ParamError(name, "%s must be an RFC 3339 date-time with Z or an offset, such as 2026-11-21T10:15:30Z; got %q.", name, v)
	}
	t = t.UTC()
	return &t, nil
}
