package sqlstore

import (
	"context"

	"github.com/pds-dev/pds/internal/domain"
)

// scanner is a row or rows: anything with Scan.
type scanner interface{ Scan(dest ...any) error }

// listPage reads one page of the rows fromWhere selects, in orderBy order,
// and their total. Two statements rather than COUNT(*) OVER (): the window
// makes the engine visit every matching row for each page, where the page
// query alone stops after LIMIT rows of the list index.
func listPage[T any](ctx context.Context, q querier, columns, fromWhere, orderBy string, args []any,
	p domain.PageRequest, scan func(scanner) (T, error)) ([]T, int, error) {
	var total int
	if err := q.queryRow(ctx, `SELECT COUNT(*) FROM `+fromWhere, args...).Scan(&total); err != nil {
		return nil, 0, err
	}
	items := []T{}
	if total <= p.Offset() {
		return items, total, nil
	}
	pageArgs := append(append([]any(nil), args...), p.Size, p.Offset())
	rows, err := q.query(ctx, `SELECT `+columns+` FROM `+fromWhere+` ORDER BY `+orderBy+` LIMIT ? OFFSET ?`, pageArgs...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	for rows.Next() {
		item, err := scan(rows)
		if err != nil {
			return nil, 0, err
		}
		items = append(items, item)
	}
	return items, total, rows.Err()
}
