package sqlstore

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

// countHour is the hour an attempt is counted in: its start, in UTC.
func countHour(t time.Time) time.Time { return t.UTC().Truncate(time.Hour) }

// attemptTally adds up a batch's recorded attempts by subscription and
// hour, for one upsert of webhook_attempt_counts in the batch's
// transaction.
type attemptTally map[attemptHour]*[3]int // succeeded, failed, errors

type attemptHour struct {
	webhookID string
	hour      int64
}

func (t attemptTally) add(webhookID string, a domain.DeliveryAttempt) {
	k := attemptHour{webhookID, countHour(a.AttemptedAt).UnixMilli()}
	n := t[k]
	if n == nil {
		n = new([3]int)
		t[k] = n
	}
	switch a.Outcome() {
	case domain.AttemptSucceeded:
		n[0]++
	case domain.AttemptFailed:
		n[1]++
	default:
		n[2]++
	}
}

// write adds the tally to the stored counts. The caller holds the locks of
// the subscriptions counted (FinishAttempts), so no two transactions write
// one row at once.
func (t attemptTally) write(ctx context.Context, q querier) error {
	keys := slices.SortedFunc(maps.Keys(t), func(a, b attemptHour) int {
		return cmp.Or(strings.Compare(a.webhookID, b.webhookID), cmp.Compare(a.hour, b.hour))
	})
	for chunk := range slices.Chunk(keys, finishChunk) {
		var a sqlArgs
		var b strings.Builder
		b.WriteString(`INSERT INTO webhook_attempt_counts (webhook_id, hour, succeeded, failed, errors) VALUES `)
		for i, k := range chunk {
			if i > 0 {
				b.WriteString(", ")
			}
			n := t[k]
			b.WriteString("(" + a.list(k.webhookID, k.hour, n[0], n[1], n[2]) + ")")
		}
		b.WriteString(` ON CONFLICT (webhook_id, hour) DO UPDATE SET succeeded = webhook_attempt_counts.succeeded + excluded.succeeded,
			failed = webhook_attempt_counts.failed + excluded.failed, errors = webhook_attempt_counts.errors + excluded.errors`)
		if _, err := q.exec(ctx, b.String(), a...); err != nil {
			return err
		}
	}
	return nil
}

// AttemptCounts reads the account's attempt counts from since's hour on:
// the account's subscriptions, then each one's hours from its primary key.
func (s *Store) AttemptCounts(ctx context.Context, accountID string, since time.Time) (_ []domain.AttemptCount, err error) {
	defer named("AttemptCounts", &err)
	return safeValue(ctx, s, func(q querier) ([]domain.AttemptCount, error) {
		return queryAll(ctx, q, func(sc scanner) (domain.AttemptCount, error) {
			var c domain.AttemptCount
			var hour int64
			err := sc.Scan(&c.WebhookID, &hour, &c.Succeeded, &c.Failed, &c.Errors)
			c.Hour = domain.FromMillis(hour)
			return c, err
		}, `SELECT ac.webhook_id, ac.hour, ac.succeeded, ac.failed, ac.errors
			FROM webhooks w JOIN webhook_attempt_counts ac ON ac.webhook_id = w.id
			WHERE w.account_id = $1 AND ac.hour >= $2 ORDER BY ac.webhook_id, ac.hour`, accountID, countHour(since).UnixMilli())
	})
}

// pruneAttemptCounts deletes the counts of the hours that ended by before,
// each subscription's oldest hours from its end of the primary key.
func (s *Store) pruneAttemptCounts(ctx context.Context, before time.Time) error {
	_, err := s.writer().exec(ctx, `DELETE FROM webhook_attempt_counts WHERE webhook_id IN (SELECT id FROM webhooks) AND hour < $1`,
		countHour(before).UnixMilli())
	return err
}
