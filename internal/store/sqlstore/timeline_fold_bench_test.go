package sqlstore_test

import (
	"context"
	"testing"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store/sqlstore"
	"github.com/pds-dev/pds/internal/testenv"
)

// BenchmarkFoldTimelines folds chunks of 5,000 deltas of new persons, seven
// a millisecond as a sustained load of new persons writes them, into the
// buckets of an account that already holds 100,000; an op is a chunk.
func BenchmarkFoldTimelines(b *testing.B) {
	st, ok := testenv.SQLite.NewStore(b).(*sqlstore.Store)
	if !ok {
		b.Fatal("the SQLite store is not a *sqlstore.Store")
	}
	ctx := context.Background()
	acc := domain.NewID("acc")
	const chunk = 5000
	at := seedEpoch.UnixMilli()
	add := func(n int) {
		if err := st.InTx(ctx, func(exec func(string, ...any) error) error {
			return exec(`INSERT INTO timeline_deltas (account_id, series, key, at_ms, n)
				WITH RECURSIVE c(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM c WHERE x < $1 - 1)
				SELECT $2, 'persons', '', $3 + x / 7, 1 FROM c`, n, acc, at)
		}); err != nil {
			b.Fatal(err)
		}
		at += int64(n / 7)
	}
	add(100_000)
	if err := st.FoldTimelines(ctx); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		add(chunk)
		b.StartTimer()
		if err := st.FoldTimelines(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*chunk), "ns/delta")
}

// BenchmarkFoldMoves folds chunks of 1,000 persons seen again, each the
// only person of its account last seen in its millisecond (as persons seen
// one at a time are): a -1 delta that empties its bucket, and a +1 delta
// where the persons seen now gather, seven a millisecond. An op is a chunk.
func BenchmarkFoldMoves(b *testing.B) {
	for _, eng := range testenv.Engines {
		b.Run(eng.Name, func(b *testing.B) {
			st, ok := eng.NewStore(b).(*sqlstore.Store)
			if !ok {
				b.Fatal("the store is not a *sqlstore.Store")
			}
			st.StopFolding()
			ctx := context.Background()
			acc := domain.NewID("acc")
			const (
				seeded = 200_000
				chunk  = 1000
			)
			// The seeded persons, one a millisecond.
			old := seedEpoch.UnixMilli()
			deltas := func(n int, at int64, perMilli, sign int) {
				if err := st.InTx(ctx, func(exec func(string, ...any) error) error {
					return exec(`INSERT INTO timeline_deltas (account_id, series, key, at_ms, n)
						WITH RECURSIVE c(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM c WHERE x < $1)
						SELECT $2, 'persons', '', CAST($3 AS BIGINT) + x / $4, $5 FROM c`, n-1, acc, at, perMilli, sign)
				}); err != nil {
					b.Fatal(err)
				}
			}
			deltas(seeded, old, 1, 1)
			if err := st.FoldTimelines(ctx); err != nil {
				b.Fatal(err)
			}
			now := old + 10*seeded
			moved := 0
			b.ResetTimer()
			for range b.N {
				if moved+chunk > seeded {
					b.Fatalf("more than %d persons to move; run fewer ops (-benchtime)", seeded)
				}
				b.StopTimer()
				deltas(chunk, old+int64(moved), 1, -1)
				deltas(chunk, now, 7, 1)
				moved += chunk
				now += chunk / 7
				b.StartTimer()
				if err := st.FoldTimelines(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*chunk), "ns/person")
		})
	}
}
