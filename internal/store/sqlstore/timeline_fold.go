package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"sync"
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
		var last, n int64
		err := q.queryRow(ctx, `SELECT COALESCE(MAX(id), 0), COUNT(*) FROM (SELECT id FROM timeline_deltas ORDER BY id LIMIT $1) c`,
			chunk).Scan(&last, &n)
		if err != nil || n == 0 {
			return err
		}
		moved = int(n)
		if s.dialect.ModifyingCTE {
			return foldTaking(ctx, q, last)
		}
		return foldAlone(ctx, q, last)
	})
	return moved, err
}

// foldTaking folds where writers run side by side (PostgreSQL): one
// statement deletes the deltas it counts, so that a delta committed
// meanwhile with a smaller id is neither lost nor counted twice, and
// returns the buckets it emptied, which the next deletes.
func foldTaking(ctx context.Context, q querier, last int64) error {
	rows, err := q.query(ctx, levelsSQL()+`,
		d AS (DELETE FROM timeline_deltas WHERE id <= $1 RETURNING account_id, series, key, at_ms, n),
		up AS (`+upsertBuckets("d", "true")+` RETURNING account_id, series, key, level, bucket, n)
		SELECT account_id, series, key, level, bucket FROM up WHERE n = 0`, last)
	if err != nil {
		return err
	}
	type bucket struct {
		account, series, key string
		level                int
		bucket               int64
	}
	var empty []bucket
	for rows.Next() {
		var b bucket
		if err := rows.Scan(&b.account, &b.series, &b.key, &b.level, &b.bucket); err != nil {
			rows.Close()
			return err
		}
		empty = append(empty, b)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, b := range empty {
		if _, err := q.exec(ctx, `DELETE FROM timeline_counts
			WHERE account_id = $1 AND series = $2 AND key = $3 AND level = $4 AND bucket = $5 AND n = 0`,
			b.account, b.series, b.key, b.level, b.bucket); err != nil {
			return err
		}
	}
	return nil
}

// foldAlone folds where this transaction is the only writer (SQLite): add,
// drop the buckets the deltas emptied, then delete the deltas. Deltas are
// summed per time before they go to every level: a bulk write (an import
// of a million persons) leaves a delta per row but only a few distinct
// times, and sorting a summed delta per time and level costs a fraction of
// sorting every delta at every level.
func foldAlone(ctx context.Context, q querier, last int64) error {
	summed := `(SELECT account_id, series, key, at_ms, SUM(n) AS n FROM timeline_deltas WHERE id <= $1
		GROUP BY account_id, series, key, at_ms) d`
	for _, statement := range []string{
		levelsSQL() + ` ` + upsertBuckets(summed, "true"),
		levelsSQL() + ` DELETE FROM timeline_counts WHERE n = 0 AND (account_id, series, key, level, bucket) IN (
			SELECT ` + deltaBuckets + ` FROM ` + summed + ` CROSS JOIN levels l)`,
		`DELETE FROM timeline_deltas WHERE id <= $1`,
	} {
		if _, err := q.exec(ctx, statement, last); err != nil {
			return err
		}
	}
	return nil
}

// FoldTimelines folds every delta recorded so far, in large transactions.
// The background folder does this on its own, in small ones; an import
// calls it so that it leaves no backlog behind.
func (s *Store) FoldTimelines(ctx context.Context) error {
	return s.foldAll(ctx, bulkFoldChunk)
}

func (s *Store) foldAll(ctx context.Context, chunk int) error {
	for {
		n, err := s.foldTimelines(ctx, chunk)
		if err != nil || n < chunk {
			return err
		}
	}
}

// folder folds deltas in the background until stopped.
type folder struct {
	quit    chan struct{}
	stopped chan struct{}
	stop    sync.Once
}

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
