package sqlstore

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"
)

// FoldAlone is the timeline fold (Dialect.Fold) where the fold's
// transaction is the only writer (SQLite).
var FoldAlone = foldAlone

// foldAlone folds where this transaction is the only writer (SQLite): add,
// drop the buckets the deltas emptied, then delete the deltas.
//
// The deltas are summed per bucket here, not by a GROUP BY: SQLite groups
// by sorting a row per delta and level, and its comparisons made that sort
// cost about as much per delta as the rest of creating a person, on the
// writer every other write waits for. A chunk of a sustained load has a few
// deltas a millisecond, so its buckets are far fewer than its deltas.
func foldAlone(ctx context.Context, q querier, last int64) error {
	sums, err := bucketSums(ctx, q, last)
	if err != nil {
		return err
	}
	keys := slices.Collect(maps.Keys(sums))
	// In key order, so that the upserts walk the counts' pages in turn.
	slices.SortFunc(keys, func(a, b timelineBucket) int {
		return cmp.Or(strings.Compare(a.account, b.account), strings.Compare(a.series, b.series),
			strings.Compare(a.key, b.key), cmp.Compare(a.level, b.level), cmp.Compare(a.bucket, b.bucket))
	})
	for _, b := range keys {
		n := sums[b]
		if n == 0 {
			continue // changes nothing, and would make an empty bucket
		}
		// Only a bucket that lost rows can be left empty, and one that
		// loses its last is dropped at once: a person seen again empties
		// the millisecond it was last seen in, unless others share it.
		if n < 0 {
			res, err := q.exec(ctx, `DELETE FROM timeline_counts
				WHERE account_id = $1 AND series = $2 AND key = $3 AND level = $4 AND bucket = $5 AND n = $6`,
				b.account, b.series, b.key, b.level, b.bucket, -n)
			if err != nil {
				return err
			}
			dropped, err := res.RowsAffected()
			if err != nil {
				return err
			}
			if dropped == 1 {
				continue
			}
		}
		if _, err := q.exec(ctx, `INSERT INTO timeline_counts (account_id, series, key, level, bucket, n)
			VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (account_id, series, key, level, bucket) DO UPDATE SET n = timeline_counts.n + excluded.n`,
			b.account, b.series, b.key, b.level, b.bucket, n); err != nil {
			return err
		}
	}
	_, err = q.exec(ctx, `DELETE FROM timeline_deltas WHERE id <= $1`, last)
	return err
}

// timelineBucket names one row of timeline_counts.
type timelineBucket struct {
	account, series, key string
	level                int
	bucket               int64
}

// bucketSums sums the deltas up to last per bucket, at every level.
func bucketSums(ctx context.Context, q querier, last int64) (map[timelineBucket]int64, error) {
	rows, err := q.query(ctx, `SELECT account_id, series, key, at_ms, n FROM timeline_deltas WHERE id <= $1`, last)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	sums := map[timelineBucket]int64{}
	var prev timelineBucket
	for rows.Next() {
		var (
			b     timelineBucket
			at, n int64
		)
		if err := rows.Scan(&b.account, &b.series, &b.key, &at, &n); err != nil {
			return nil, err
		}
		// One string per timeline rather than per delta.
		if b.account == prev.account && b.series == prev.series && b.key == prev.key {
			b.account, b.series, b.key = prev.account, prev.series, prev.key
		}
		prev = b
		for l := range timelineLevels {
			b.level, b.bucket = l, floorDiv(at, levelWidth(l))
			sums[b] += n
		}
	}
	return sums, rows.Err()
}
