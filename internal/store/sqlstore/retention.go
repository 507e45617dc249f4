package sqlstore

import (
	"context"
	"time"
)

// PruneDeliveries deletes finished deliveries whose last activity (their
// last attempt, else their creation) is before `before`; their attempts go
// with them (ON DELETE CASCADE). The attempt counts of the hours that ended
// by `before` go first, in one statement: a row per subscription and hour. Each statement deletes at most batch rows
// in its own transaction, so the SQLite writer is never held for long.
//
// A finished delivery may still hold a lease: an attempt in flight when
// the delivery was cancelled. It is kept until that lease has run out long
// enough ago (before `before`), so the attempt can still be recorded.
// Retired secrets are unaffected: they are kept only for pending
// deliveries, which are never pruned.
func (s *Store) PruneDeliveries(ctx context.Context, before time.Time, batch int) (_ int, err error) {
	defer named("PruneDeliveries", &err)
	if err := s.pruneAttemptCounts(ctx, before); err != nil {
		return 0, err
	}
	cutoff := before.UnixMilli()
	// On PostgreSQL the subquery locks the rows it picks, and a row changed
	// since the statement began (say, redelivered) is checked again on its
	// new version; rows another transaction holds are left for next time.
	prune := `DELETE FROM deliveries WHERE id IN (SELECT d.id FROM deliveries d
		WHERE d.status IN ` + finishedSQL + ` AND d.created_at < $1 AND (d.lease_until IS NULL OR d.lease_until < $2)
		AND NOT EXISTS (SELECT 1 FROM delivery_attempts a WHERE a.delivery_id = d.id AND a.attempted_at >= $3)
		LIMIT $4` + s.dialect.ClaimRows + `)`
	total := 0
	for {
		res, err := s.writer().exec(ctx, prune, cutoff, cutoff, cutoff, batch)
		if err != nil {
			return total, err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, err
		}
		total += int(n)
		if int(n) < batch || ctx.Err() != nil {
			return total, ctx.Err()
		}
	}
}
