package httpapi

import (
	"net/http"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/params"
)

// parsePage reads page and size (params.Page).
func parsePage(r *http.Request) (domain.PageRequest, error) { return params.Page(query(r)) }

// page builds the envelope; items is never null.
func page[T any](items []T, req domain.PageRequest, total int) domain.Page[T] {
	if items == nil {
		items = []T{}
	}
	return domain.Page[T]{Items: items, Page: req.Page, Size: req.Size, Total: total}
}

// parseTimeParam reads an RFC 3339 query time (params.Time).
func parseTimeParam(r *http.Request, name string) (*time.Time, error) {
	return params.Time(query(r), name)
}

// parseTimeRange reads since and until (params.TimeRange).
func parseTimeRange(r *http.Request) (since, until *time.Time, err error) {
	return params.TimeRange(query(r))
}
