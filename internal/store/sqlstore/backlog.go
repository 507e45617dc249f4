package sqlstore

import (
	"context"
	"database/sql"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// backlogBound bounds the rows a metrics scrape counts.
const backlogBound = store.PendingBound

// WebhookBacklog reads, for metrics, the pending deliveries, the oldest due
// one and the open bursts of every account, each with one bounded statement.
func (s *Store) WebhookBacklog(ctx context.Context, now time.Time) (_ store.WebhookBacklog, err error) {
	defer named("WebhookBacklog", &err)
	var b store.WebhookBacklog
	q := s.reader()
	if err := q.queryRow(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM deliveries WHERE status = `+pendingSQL+` LIMIT $1) p`,
		backlogBound).Scan(&b.Pending); err != nil {
		return b, err
	}
	var oldest sql.NullInt64
	if err := q.queryRow(ctx, `SELECT MIN(next_attempt_at) FROM deliveries WHERE status = `+pendingSQL+` AND next_attempt_at <= $1`,
		now.UnixMilli()).Scan(&oldest); err != nil {
		return b, err
	}
	b.OldestDue = timePtr(oldest)
	if err := q.queryRow(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM bursts LIMIT $1) b`, backlogBound).Scan(&b.OpenBursts); err != nil {
		return b, err
	}
	b.Inactive, err = inactiveByReason(ctx, q)
	return b, err
}

// inactiveByReason counts the inactive subscriptions of every account by
// why they are inactive, in the index webhooks_inactive.
func inactiveByReason(ctx context.Context, q querier) (map[string]int, error) {
	out := map[string]int{domain.DisabledFailures: 0, domain.DisabledGone: 0, domain.DisabledManual: 0}
	rows, err := q.query(ctx, `SELECT disabled_reason, COUNT(*) FROM webhooks WHERE is_active = $1
		GROUP BY disabled_reason`, false)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var reason sql.NullString
		var n int
		if err := rows.Scan(&reason, &n); err != nil {
			return nil, err
		}
		// No reason: switched off before reasons were kept, by its owner.
		r := domain.DisabledManual
		if reason.Valid {
			r = reason.String
		}
		out[r] += n
	}
	return out, rows.Err()
}

// PoolStats gives the statistics of the store's database pools, by name.
func (s *Store) PoolStats() map[string]sql.DBStats {
	out := map[string]sql.DBStats{}
	if s.r == s.w {
		out["main"] = s.w.Stats()
	} else {
		out["read"], out["write"] = s.r.Stats(), s.w.Stats()
	}
	return out
}
