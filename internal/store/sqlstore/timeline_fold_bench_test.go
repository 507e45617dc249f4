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
