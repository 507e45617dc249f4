// Package params reads query strings and form values strictly, the same
// way for the API and the console: a value that does not parse, or that no
// engine can hold, is refused by name, never dropped or half-read.
package params

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
)

// Bounds of the page parameters (spec section 8) and of one query string.
const (
	DefaultPageSize = 25
	MaxPageSize     = 100
	// maxParams bounds the parameters of one query string. The longest
	// legitimate query (tag_ids at its bound of 100 plus the page and
	// filters) is far below it.
	maxParams = 1000
)

// Storable says whether s is text every engine can hold: PostgreSQL cannot
// hold a NUL character or bytes that are not UTF-8, and SQLite would store
// what PostgreSQL refuses; so such input is refused at the door, the same
// on both engines.
func Storable(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

// Printable makes a name fit to quote back in a problem document.
func Printable(s string) string {
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", "?"), "?")
}

// Parse reads a query string (or a form body) strictly: a pair holding a
// raw ';', a malformed percent-escape, or more than 1000 pairs is a 400
// that names the parameter, never a value silently dropped. url.ParseQuery
// refuses the same input but does not say where, which a client needs.
func Parse(raw string) (url.Values, error) {
	q := url.Values{}
	if raw == "" {
		return q, nil
	}
	if n := strings.Count(raw, "&") + 1; n > maxParams {
		return nil, domain.ParamError("", "The query string holds %d parameters; at most %d are accepted.", n, maxParams)
	}
	for pair := range strings.SplitSeq(raw, "&") {
		if pair == "" {
			continue
		}
		rawName, rawValue, _ := strings.Cut(pair, "=")
		name, err := url.QueryUnescape(rawName)
		if err != nil {
			return nil, domain.ParamError(Printable(rawName), "The query parameter name %q holds a malformed percent-escape; encode %% as %%25.", Printable(rawName))
		}
		if strings.Contains(pair, ";") {
			return nil, domain.ParamError(Printable(name), "The query parameter %s holds a raw ';'; separate parameters with '&' and encode ';' as %%3B.", Printable(name))
		}
		value, err := url.QueryUnescape(rawValue)
		if err != nil {
			return nil, domain.ParamError(Printable(name), "The query parameter %s holds a malformed percent-escape; encode %% as %%25.", Printable(name))
		}
		q[name] = append(q[name], value)
	}
	return q, nil
}

// Page reads page and size; outside their bounds is a 400, never a clamp.
func Page(q url.Values) (domain.PageRequest, error) {
	p := domain.PageRequest{Page: 1, Size: DefaultPageSize}
	if v := q.Get("page"); q.Has("page") {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return p, domain.ParamError("page", "page must be an integer of at least 1; got %q.", v)
		}
		p.Page = n
	}
	if v := q.Get("size"); q.Has("size") {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxPageSize {
			return p, domain.ParamError("size", "size must be an integer from 1 to %d; got %q.", MaxPageSize, v)
		}
		p.Size = n
	}
	return p, nil
}

// Time reads an RFC 3339 time with "Z" or an offset; nil when absent.
func Time(q url.Values, name string) (*time.Time, error) {
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

// NonEmpty reads an optional parameter that, when given, must not be
// empty.
func NonEmpty(q url.Values, name string) (*string, error) {
	if !q.Has(name) {
		return nil, nil
	}
	v := q.Get(name)
	if v == "" {
		return nil, domain.ParamError(name, "%s must not be empty when given.", name)
	}
	return &v, nil
}

// TagIDs reads tag_ids, repeated (tag_ids=a&tag_ids=b) or comma-separated
// (tag_ids=a,b) or both.
func TagIDs(q url.Values) ([]string, error) {
	var ids []string
	for _, v := range q["tag_ids"] {
		for _, id := range strings.Split(v, ",") {
			if id = strings.TrimSpace(id); id != "" {
				ids = append(ids, id)
			}
		}
	}
	if len(ids) > domain.MaxTagIDs {
		return nil, domain.ParamError("tag_ids", "tag_ids may name at most %d tags; got %d.", domain.MaxTagIDs, len(ids))
	}
	return ids, nil
}

// Enum reads an optional parameter that, when given, must be one of
// allowed; present but empty is as wrong as any other value outside the
// enumeration.
func Enum(q url.Values, name string, allowed []string) (*string, error) {
	if !q.Has(name) {
		return nil, nil
	}
	v := q.Get(name)
	if !slices.Contains(allowed, v) {
		return nil, domain.ParamError(name, "%s", service.EnumDetail(name, v, allowed))
	}
	return &v, nil
}

// Bool reads a flag given as true or false; absent is false, any other
// value a 400 naming it.
func Bool(q url.Values, name string) (bool, error) {
	if !q.Has(name) {
		return false, nil
	}
	switch v := q.Get(name); v {
	case "true":
		return true, nil
	case "false":
		return false, nil
	default:
		return false, domain.ParamError(name, "%s must be true or false; got %q.", name, v)
	}
}

// TimeRange reads since and until, the inclusive bounds of a list's time;
// since after until is refused.
func TimeRange(q url.Values) (since, until *time.Time, err error) {
	if since, err = Time(q, "since"); err != nil {
		return nil, nil, err
	}
	if until, err = Time(q, "until"); err != nil {
		return nil, nil, err
	}
	if since != nil && until != nil && since.After(*until) {
		return nil, nil, domain.ParamError("since", "since must not be after until.")
	}
	return since, until, nil
}

// DeliveryFilter reads the filters of a subscription's delivery log:
// status, event, person_id, since and until. One left out is "" (or nil).
func DeliveryFilter(q url.Values) (domain.DeliveryFilter, error) {
	var f domain.DeliveryFilter
	status, err := Enum(q, "status", domain.DeliveryStatuses)
	if err != nil {
		return f, err
	}
	event, err := Enum(q, "event", domain.WebhookEvents)
	if err != nil {
		return f, err
	}
	person, err := NonEmpty(q, "person_id")
	if err != nil {
		return f, err
	}
	if status != nil {
		f.Status = *status
	}
	if event != nil {
		f.Event = *event
	}
	if person != nil {
		f.PersonID = *person
	}
	f.Since, f.Until, err = TimeRange(q)
	return f, err
}
