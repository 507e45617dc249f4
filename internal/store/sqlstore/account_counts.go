package sqlstore

import (
	"context"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// AccountCounts reads an account's counts in one snapshot. Persons and
// breadcrumbs are the totals of their timelines over all time (a few
// bucket rows and the deltas not yet folded, never the rows themselves);
// subscriptions are few; pending deliveries are counted in each
// subscription's status index (migration 00110), up to store.PendingBound.
func (s *Store) AccountCounts(ctx context.Context, accountID string) (_ domain.AccountCounts, err error) {
	defer named("AccountCounts", &err)
	var c domain.AccountCounts
	err = s.safeReadTx(ctx, func(q querier) error {
		for _, t := range []struct {
			tl timeline
			n  *int
		}{{personsTimeline(accountID), &c.Persons}, {breadcrumbsTimeline(accountID, nil), &c.Breadcrumbs}} {
			m, err := timelineRange{tl: t.tl, lo: timelineMin, hi: timelineMax}.summarize(ctx, q)
			if err != nil {
				return err
			}
			*t.n = m.total()
		}
		if err := q.queryRow(ctx, `SELECT COUNT(*) FROM webhooks WHERE account_id = $1`, accountID).Scan(&c.Subscriptions); err != nil {
			return err
		}
		// CROSS JOIN holds SQLite to the written order: the account's
		// subscriptions, then each one's pending deliveries, rather than
		// every account's pending deliveries, then their subscription.
		return q.queryRow(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM webhooks w CROSS JOIN deliveries d
			WHERE w.account_id = $1 AND d.webhook_id = w.id AND d.status = $2 LIMIT $3) pending`,
			accountID, domain.DeliveryPending, store.PendingBound).Scan(&c.PendingDeliveries)
	})
	return c, err
}
