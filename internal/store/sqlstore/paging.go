package sqlstore

import (
	"context"
	"database/sql"

	"github.com/pds-dev/pds/internal/domain"
)

// scanner is a row or rows: anything with Scan.
type scanner interface{ Scan(dest ...any) error }

// withTotal scans one more column, the COUNT(*) OVER () that listPage adds.
type withTotal struct {
	rows  *sql.Rows
	total *int
}

func (w withTotal) Scan(dest ...any) error { return w.rows.Scan(append(dest, w.total)...) }

// listPage reads one page and the total in a single statement, so both come
// from the same snapshot. selectSQL selects the item columns and ends with
// its FROM, WHERE and ORDER BY; countSQL counts the same rows, and runs only
// for a page past the end, which holds no row to carry the total.
func listPage[T any](ctx context.Context, q querier, columns, fromWhere, orderBy string, args []any,
	p domain.PageRequest, scan func(scanner) (T, error)) ([]T, int, error) {
	pageArgs := append(append([]any(nil), args...), p.Size, p.Offset())
	rows, err := q.query(ctx, `SELECT `+columns+`, COUNT(*) OVER () FROM `+fromWhere+` ORDER BY `+orderBy+` LIMIT ? OFFSET ?`, pageArgs...)
	if err != nil {
		return nil, 0, err
	}
	items, total, err := scanPage(rows, scan)
	if err != nil {
		return nil, 0, err
	}
	if len(items) == 0 && p.Offset() > 0 {
		if err := q.queryRow(ctx, `SELECT COUNT(*) FROM `+fromWhere, args...).Scan(&total); err != nil {
			return nil, 0, err
		}
	}
	return items, total, nil
}

func scanPage[T any](rows *sql.Rows, scan func(scanner) (T, error)) ([]T, int, error) {
	defer rows.Close()
	items := []T{}
	total := 0
	for rows.Next() {
		item, err := scan(withTotal{rows, &total})
		if err != nil {
			return nil, 0, err
		}
		items = append(items, item)
	}
	return items, total, rows.Err()
}
