package sqlstore

import (
	"context"
	"fmt"
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
		return s.dialect.Fold(ctx, q, last)
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

// FoldTimelines folds every delta recorded so far, the timelines' and the
// tag bits', in large transactions. The background folder does this on its
// own, in small ones; an import calls it so that it leaves no backlog behind.
func (s *Store) FoldTimelines(ctx context.Context) (err error) {
	defer named("FoldTimelines", &err)
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
	// visibility check each, which kept a core busy through a large import.
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
