package sqlstore

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// foldChunk bounds the deltas one background fold transaction moves,
	// so that a backlog (a migration, bulk inserts) never holds the writer
	// for long; bulkFoldChunk is for a caller that has the writer to itself.
	foldChunk     = 5000
	bulkFoldChunk = 100_000
	// foldEvery is how often the folder looks for deltas: readers add
	// the unfolded ones, so this bounds their work, not correctness.
	foldEvery = time.Second
)

// levelsSQL is a WITH clause naming every level and its width.
func levelsSQL() string {
	var levels []string
	for l := range timelineLevels {
		levels = append(levels, fmt.Sprintf("(%d, %d)", l, levelWidth(l)))
	}
	return `WITH levels (level, width) AS (VALUES ` + strings.Join(levels, ", ") + `)`
}

// deltaBuckets selects, from deltas d, each delta's bucket at every level.
var deltaBuckets = `d.account_id, d.series, d.key, l.level, ` + floorDivSQL("d.at_ms", "l.width")

// upsertBuckets adds the summed deltas of from (named d) that satisfy where
// to their buckets.
func upsertBuckets(from, where string) string {
	return `INSERT INTO timeline_counts (account_id, series, key, level, bucket, n)
		SELECT ` + deltaBuckets + `, SUM(d.n) FROM ` + from + ` CROSS JOIN levels l WHERE ` + where + ` GROUP BY ` + deltaBuckets + `
		ON CONFLICT (account_id, series, key, level, bucket) DO UPDATE SET n = timeline_counts.n + excluded.n`
}

// foldTimelines folds the oldest chunk of deltas into their buckets at
// every level, drops the buckets it emptied (persons seen again later
// leave theirs), and reports how many deltas it moved.
func (s *Store) foldTimelines(ctx context.Context, chunk int) (int, error) {
	var moved int
	err := s.inTx(ctx, func(q querier) error {
		// Reset: the committer may run this function again (see committer).
		moved = 0
		last, n, err := oldestDeltas(ctx, q, "timeline_deltas", chunk)
		if err != nil || n == 0 {
			return err
		}
		moved = n
		if s.dialect.ModifyingCTE {
			return foldTaking(ctx, q, last)
		}
		return foldAlone(ctx, q, last)
	})
	return moved, err
}

// oldestDeltas finds the oldest chunk of rows of a table of deltas: how
// many there are, and the id of the last.
func oldestDeltas(ctx context.Context, q querier, table string, chunk int) (last int64, n int, err error) {
	err = q.queryRow(ctx, `SELECT COALESCE(MAX(id), 0), COUNT(*) FROM (SELECT id FROM `+table+` ORDER BY id LIMIT $1) c`,
		chunk).Scan(&last, &n)
	return last, n, err
}

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

// foldAlone folds where this transaction is the only writer (SQLite): add,
// drop the buckets the deltas emptied, then delete the deltas.
//
// The deltas are summed per bucket here, not by a GROUP BY: SQLite groups
// by sorting a row per delta and level, and its comparisons made that sort
// some 50 µs per delta, on the writer every other write waits for, as much
// as the rest of creating a person. A chunk of a sustained load has a few
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

// FoldTimelines folds every delta recorded so far, the timelines' and the
// tag bits', in large transactions. The background folder does this on its
// own, in small ones; an import calls it so that it leaves no backlog behind.
func (s *Store) FoldTimelines(ctx context.Context) error {
	return s.foldAll(ctx, bulkFoldChunk)
}

func (s *Store) foldAll(ctx context.Context, chunk int) error {
	for _, fold := range []func(context.Context, int) (int, error){s.foldTimelines, s.foldTagBits} {
		for {
			n, err := fold(ctx, chunk)
			if err != nil {
				return err
			}
			if n < chunk {
				break
			}
		}
	}
	return nil
}

// folder folds deltas in the background until stopped.
type folder struct {
	quit    chan struct{}
	stopped chan struct{}
	stop    sync.Once
	// imports counts the imports this store runs. While one runs the
	// folder waits: it could not fold the import's deltas before the
	// import commits, and on PostgreSQL each fold's walk to the oldest
	// deltas stepped over every one of them still uncommitted, a heap
	// visibility check each, which kept a core busy through a 1M import.
	// The import folds what it wrote when it has committed.
	imports atomic.Int32
}

// pause keeps the folder from folding until resume.
func (f *folder) pause()  { f.imports.Add(1) }
func (f *folder) resume() { f.imports.Add(-1) }

func startFolder(s *Store) *folder {
	f := &folder{quit: make(chan struct{}), stopped: make(chan struct{})}
	go func() {
		defer close(f.stopped)
		t := time.NewTicker(foldEvery)
		defer t.Stop()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			<-f.quit
			cancel()
		}()
		for {
			select {
			case <-f.quit:
				return
			case <-t.C:
				if f.imports.Load() > 0 {
					continue
				}
				// An error (the database going away) is retried on the
				// next tick; until then readers add the deltas themselves.
				_ = s.foldAll(ctx, foldChunk)
			}
		}
	}()
	return f
}

func (f *folder) close() {
	f.stop.Do(func() { close(f.quit) })
	<-f.stopped
}
