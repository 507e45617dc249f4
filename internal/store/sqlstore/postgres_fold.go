package sqlstore

import "context"

// FoldTaking is the timeline fold (Dialect.Fold) where writers run side by
// side (PostgreSQL).
var FoldTaking = foldTaking

// foldTaking folds where writers run side by side (PostgreSQL): one
// statement deletes the deltas it counts, so that a delta committed
// meanwhile with a smaller id is neither lost nor counted twice, and
// returns the buckets it emptied, which a second statement deletes, all
// of them at once: a person seen again empties the millisecond it was last
// seen in, so a fold can empty as many buckets as it moved persons, and a
// statement for each kept a server process busy for as long.
func foldTaking(ctx context.Context, q querier, last int64) error {
	rows, err := q.query(ctx, levelsSQL()+`,
		d AS (DELETE FROM timeline_deltas WHERE id <= $1 RETURNING account_id, series, key, at_ms, n),
		up AS (`+upsertBuckets("d", "true")+` RETURNING account_id, series, key, level, bucket, n)
		SELECT account_id, series, key, level, bucket FROM up WHERE n = 0`, last)
	if err != nil {
		return err
	}
	var (
		accounts, series, keys []string
		levels                 []int32
		buckets                []int64
	)
	for rows.Next() {
		var (
			account, s, key string
			level           int32
			bucket          int64
		)
		if err := rows.Scan(&account, &s, &key, &level, &bucket); err != nil {
			rows.Close()
			return err
		}
		accounts, series, keys = append(accounts, account), append(series, s), append(keys, key)
		levels, buckets = append(levels, level), append(buckets, bucket)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(buckets) == 0 {
		return err
	}
	// n = 0 again: a fold beside this one may have filled the bucket since.
	_, err = q.exec(ctx, `DELETE FROM timeline_counts c
		USING unnest($1::text[], $2::text[], $3::text[], $4::integer[], $5::bigint[]) AS e (account_id, series, key, level, bucket)
		WHERE c.account_id = e.account_id AND c.series = e.series AND c.key = e.key
			AND c.level = e.level AND c.bucket = e.bucket AND c.n = 0`,
		accounts, series, keys, levels, buckets)
	return err
}
