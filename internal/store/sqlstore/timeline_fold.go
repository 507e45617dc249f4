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

// foldSQL moves the deltas with id <= $1 into their buckets at every level
// and returns each bucket it changed with its new count. An engine that runs
// writers side by side deletes the deltas in the same statement, so that a
// delta committed meanwhile with a smaller id is neither lost nor counted
// twice; with one writer at a time the deltas are deleted afterwards.
func foldSQL(d Dialect) string {
	var levels []string
	for l := range timelineLevels {
		levels = append(levels, fmt.Sprintf("(%d, %d)", l, levelWidth(l)))
	}
	from, where := `timeline_deltas d`, `d.id <= $1`
	with := `WITH levels (level, width) AS (VALUES ` + strings.Join(levels, ", ") + `)`
	if d.ModifyingCTE {
		with += `, d AS (DELETE FROM timeline_deltas WHERE id <= $1 RETURNING account_id, series, key, at_ms, n)`
		from, where = `d`, `true`
	}
	return with + `
		INSERT INTO timeline_counts (account_id, series, key, level, bucket, n)
		SELECT d.account_id, d.series, d.key, l.level, ` + floorDivSQL("d.at_ms", "l.width") + `, SUM(d.n)
		FROM ` + from + ` CROSS JOIN levels l WHERE ` + where + `
		GROUP BY d.account_id, d.series, d.key, l.level, ` + floorDivSQL("d.at_ms", "l.width") + `
		ON CONFLICT (account_id, series, key, level, bucket) DO UPDATE SET n = timeline_counts.n + excluded.n
		RETURNING account_id, series, key, level, bucket, n`
}

// foldTimelines folds one chunk of deltas and reports how many it moved.
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
		type bucket struct {
			account, series, key string
			level                int
			bucket               int64
		}
		rows, err := q.query(ctx, foldSQL(s.dialect), last)
		if err != nil {
			return err
		}
		var empty []bucket
		for rows.Next() {
			var b bucket
			var count int64
			if err := rows.Scan(&b.account, &b.series, &b.key, &b.level, &b.bucket, &count); err != nil {
				rows.Close()
				return err
			}
			if count == 0 {
				empty = append(empty, b)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if !s.dialect.ModifyingCTE {
			if _, err := q.exec(ctx, `DELETE FROM timeline_deltas WHERE id <= $1`, last); err != nil {
				return err
			}
		}
		// A bucket everyone has left (persons seen again later) goes, so
		// that the table holds no more buckets than there are rows.
		for _, b := range empty {
			if _, err := q.exec(ctx, `DELETE FROM timeline_counts
				WHERE account_id = $1 AND series = $2 AND key = $3 AND level = $4 AND bucket = $5 AND n = 0`,
				b.account, b.series, b.key, b.level, b.bucket); err != nil {
				return err
			}
		}
		return nil
	})
	return moved, err
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
