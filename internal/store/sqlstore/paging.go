package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pds-dev/pds/internal/domain"
)

// scanner is a row or rows: anything with Scan.
type scanner interface{ Scan(dest ...any) error }

// checkPage refuses a page the API layer should never have asked for.
func checkPage(p domain.PageRequest) error {
	if p.Page < 1 || p.Size < 1 {
		return fmt.Errorf("list page %d of size %d: both must be at least 1", p.Page, p.Size)
	}
	return nil
}

// listPage reads one page of the rows fromWhere selects, in orderBy order,
// and their total. Two statements rather than COUNT(*) OVER (): the window
// makes the engine visit every matching row for each page, where the page
// query alone stops after LIMIT rows of the list index.
func listPage[T any](ctx context.Context, q querier, columns, fromWhere, orderBy string, args []any,
	p domain.PageRequest, scan func(scanner) (T, error)) ([]T, int, error) {
	if err := checkPage(p); err != nil {
		return nil, 0, err
	}
	total, err := countRows(ctx, q, fromWhere, args)
	if err != nil {
		return nil, 0, err
	}
	items, err := pageOf(ctx, q, columns, fromWhere, orderBy, args, p, total, scan)
	return items, total, err
}

// countRows counts the rows fromWhere selects.
func countRows(ctx context.Context, q querier, fromWhere string, args []any) (int, error) {
	var n int
	err := q.queryRow(ctx, `SELECT COUNT(*) FROM `+fromWhere, args...).Scan(&n)
	return n, err
}

// pageOf reads one page of the rows fromWhere selects, in orderBy order,
// given their total. In a read transaction a page past the middle is read
// from the far end (see spanOf).
func pageOf[T any](ctx context.Context, q querier, columns, fromWhere, orderBy string, args []any,
	p domain.PageRequest, total int, scan func(scanner) (T, error)) ([]T, error) {
	span, ok := spanOf(q, p, total)
	if !ok {
		return []T{}, nil
	}
	if span.fromEnd {
		orderBy = reversedOrder(orderBy)
	}
	pageArgs := append(sqlArgs(nil), args...)
	clause := ` LIMIT ` + pageArgs.add(span.limit) + ` OFFSET ` + pageArgs.add(span.skip)
	items, err := queryAll(ctx, q, scan, `SELECT `+columns+` FROM `+fromWhere+` ORDER BY `+orderBy+clause, pageArgs...)
	turn(span, items)
	return items, err
}

// pageSpan is how a page is read: skip rows, then take up to limit, in the
// list's order or, fromEnd, in the reverse order and then turned round.
type pageSpan struct {
	limit, skip int
	fromEnd     bool
}

// spanOf is how to read page p of total rows; false when the page is past
// the end and needs no statement. An OFFSET walks every row it skips, so
// in a read transaction a page past the middle is read from the far end: no
// page walks more than half the rows, and the last page walks none. Only in
// one does total count the rows of the page query's own snapshot; outside
// one, a row written between the count and the page would move the far
// end. Both engines read a list's index backwards as cheaply as forwards.
func spanOf(q querier, p domain.PageRequest, total int) (pageSpan, bool) {
	// Offset saturates instead of overflowing for a huge page number.
	offset := p.Offset()
	if total <= offset {
		return pageSpan{}, false
	}
	end := min(offset, total-p.Size) + p.Size // offset+size, at most total
	if q.tx != nil && total-end < offset {
		return pageSpan{limit: end - offset, skip: total - end, fromEnd: true}, true
	}
	return pageSpan{limit: p.Size, skip: offset}, true
}

// turn puts a page read from the far end back in the list's order.
func turn[T any](span pageSpan, items []T) {
	if span.fromEnd {
		slices.Reverse(items)
	}
}

// reversedOrder is an ORDER BY list (terms separated by commas, each a
// column with an optional ASC or DESC) with every term's direction turned.
// The columns pageOf orders by are never NULL, so where NULLs sort does not
// arise.
func reversedOrder(orderBy string) string {
	terms := strings.Split(orderBy, ",")
	for i, term := range terms {
		term = strings.TrimSpace(term)
		switch {
		case strings.HasSuffix(term, " DESC"):
			term = strings.TrimSuffix(term, " DESC")
		case strings.HasSuffix(term, " ASC"):
			term = strings.TrimSuffix(term, " ASC") + " DESC"
		default:
			term += " DESC"
		}
		terms[i] = term
	}
	return strings.Join(terms, ", ")
}

// queryAll reads every row query selects through scan; never a nil slice.
func queryAll[T any](ctx context.Context, q querier, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		item, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, item)
	}
	return out, rows.Err()
}

// byValue adapts a scan function that returns a pointer to one that returns
// the value, for listPage.
func byValue[T any](scan func(scanner) (*T, error)) func(scanner) (T, error) {
	return func(sc scanner) (T, error) {
		v, err := scan(sc)
		if err != nil {
			var zero T
			return zero, err
		}
		return *v, nil
	}
}

// getOne reads the one row query selects, or returns notFound when there is none.
func getOne[T any](ctx context.Context, q querier, notFound error, scan func(scanner) (T, error), query string, args ...any) (*T, error) {
	v, err := scan(q.queryRow(ctx, query, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	return &v, nil
}
