package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

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
// given their total.
func pageOf[T any](ctx context.Context, q querier, columns, fromWhere, orderBy string, args []any,
	p domain.PageRequest, total int, scan func(scanner) (T, error)) ([]T, error) {
	// A page past the end needs no statement. Offset saturates instead of
	// overflowing for a huge page number.
	if total <= p.Offset() {
		return []T{}, nil
	}
	pageArgs := append(sqlArgs(nil), args...)
	limit := ` LIMIT ` + pageArgs.add(p.Size) + ` OFFSET ` + pageArgs.add(p.Offset())
	return queryAll(ctx, q, scan, `SELECT `+columns+` FROM `+fromWhere+` ORDER BY `+orderBy+limit, pageArgs...)
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
