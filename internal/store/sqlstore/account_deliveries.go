package sqlstore

import (
	"context"
	"strconv"
	"strings"

	"github.com/pds-dev/pds/internal/domain"
)

// mergedSubscriptions bounds the subscriptions whose logs an account's log
// merges, one ordered index range each; past it the log is read as one
// range of subscriptions and sorted (SQLite allows at most 500 terms in a
// compound select, and an account has a handful of subscriptions).
const mergedSubscriptions = 100

// ListAccountDeliveries pages the deliveries of every subscription of the
// account that f lets through, newest first, in one read snapshot. The
// subscriptions are read first, from the account's own rows; each one's log
// is then the index range ListDeliveries reads, as far as the page may
// need it (Dialect.MergeArms), and the page is their merge in the log's
// order (a UNION ALL that both engines merge rather than sort: PostgreSQL's
// Merge Append, SQLite's ordered compound select). As a log's pages, one past the middle is read
// from the far end.
// The total is the sum of each log's count, each counted in its index.
func (s *Store) ListAccountDeliveries(ctx context.Context, accountID string, f domain.DeliveryFilter, p domain.PageRequest) (out []domain.Delivery, total int, err error) {
	defer named("ListAccountDeliveries", &err)
	if err := checkPage(p); err != nil {
		return nil, 0, err
	}
	scan := func(sc scanner) (*domain.Delivery, error) { return scanDelivery(sc) }
	err = s.safeReadTx(ctx, func(q querier) error {
		out, total = nil, 0
		ids, err := queryAll(ctx, q, func(sc scanner) (string, error) {
			var id string
			return id, sc.Scan(&id)
		}, `SELECT id FROM webhooks WHERE account_id = $1`, accountID)
		if err != nil || len(ids) == 0 {
			return err
		}
		var args sqlArgs
		var wheres, counts []string
		if len(ids) > mergedSubscriptions {
			where := `deliveries d WHERE d.webhook_id IN (SELECT w.id FROM webhooks w WHERE w.account_id = ` + args.add(accountID) + `)` +
				filtered(&args, "d.", f)
			items, n, err := listPage(ctx, q, deliveryColumns, where, `d.created_at DESC, d.id DESC`, args, p, byValue(scan))
			out, total = items, n
			return err
		}
		for _, id := range ids {
			where := `deliveries d WHERE d.webhook_id = ` + args.add(id) + filtered(&args, "d.", f)
			wheres = append(wheres, where)
			counts = append(counts, `(SELECT COUNT(*) FROM `+where+`)`)
		}
		if err := q.queryRow(ctx, `SELECT `+strings.Join(counts, " + "), args...).Scan(&total); err != nil {
			return err
		}
		span, ok := spanOf(q, p, total)
		if !ok {
			out = []domain.Delivery{}
			return nil
		}
		order, armOrder := `created_at DESC, id DESC`, `d.created_at DESC, d.id DESC`
		if span.fromEnd {
			order, armOrder = reversedOrder(order), reversedOrder(armOrder)
		}
		// Each log as one index range: bounded to the rows the page may
		// need of it, in order, where the engine merges only such ranges
		// (Dialect.MergeArms).
		arms := s.dialect.MergeArms(&args, wheres, armOrder, span.skip+span.limit)
		page := `SELECT * FROM (` + strings.Join(arms, " UNION ALL ") + `) d ORDER BY ` + order +
			` LIMIT ` + args.add(span.limit) + ` OFFSET ` + args.add(span.skip)
		if out, err = queryAll(ctx, q, byValue(scan), page, args...); err != nil {
			return err
		}
		turn(span, out)
		return nil
	})
	return out, total, err
}

// BoundedArms are the arms of a merge of ordered index ranges
// (Dialect.MergeArms) for a planner that merges only ranges each bounded by
// its own ORDER BY and LIMIT (PostgreSQL: Merge Append of bounded scans,
// where it would append unbounded ones and sort them all): each log's
// range bounded to the reach rows the page may need of it, in order.
func BoundedArms(args *sqlArgs, wheres []string, armOrder string, reach int) []string {
	bound := args.add(reach)
	arms := make([]string, len(wheres))
	for i, where := range wheres {
		arms[i] = `SELECT * FROM (SELECT ` + deliveryColumns + ` FROM ` + where + ` ORDER BY ` + armOrder + ` LIMIT ` + bound + `) a` + strconv.Itoa(i)
	}
	return arms
}

// PlainArms are the arms of such a merge for a planner that merges the
// ranges themselves (SQLite), and would sort each bounded subquery again.
func PlainArms(_ *sqlArgs, wheres []string, _ string, _ int) []string {
	arms := make([]string, len(wheres))
	for i, where := range wheres {
		arms[i] = `SELECT ` + deliveryColumns + ` FROM ` + where
	}
	return arms
}
