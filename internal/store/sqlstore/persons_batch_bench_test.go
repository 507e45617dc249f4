package sqlstore_test

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/testenv"
)

// BenchmarkUpsertPersons creates batches of 100 new persons, as POST
// /persons/batch does, and reports the statements each batch costs.
func BenchmarkUpsertPersons(b *testing.B) {
	for _, eng := range testenv.Engines {
		b.Run(eng.Name, func(b *testing.B) {
			if eng.Name == "postgres" {
				testenv.PostgresURL(b)
			}
			rs := openCounting(b, eng)
			ctx := context.Background()
			acc := benchAccount(b, rs)
			w := store.Write{Now: seedEpoch, Window: 5 * time.Minute}
			b.ReportAllocs()
			var statementsRun int64
			var n atomic.Int64
			size := 100
			if v, err := strconv.Atoi(os.Getenv("PDS_BATCH_SIZE")); err == nil {
				size = v
			}
			for b.Loop() {
				items := newPersons(size, func() int64 { return n.Add(1) })
				statementsRun += rs.countStatements(func() {
					if _, err := rs.UpsertPersons(ctx, acc, items, w); err != nil {
						b.Fatal(err)
					}
				})
			}
			b.ReportMetric(float64(statementsRun)/float64(b.N), "statements/op")
			b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "persons/s")
		})
	}
}

// BenchmarkUpsertPersonsConcurrent creates batches of 100 new persons
// from 4 callers at once, the shape of pdsbench's batch row.
func BenchmarkUpsertPersonsConcurrent(b *testing.B) {
	for _, eng := range testenv.Engines {
		b.Run(eng.Name, func(b *testing.B) {
			if eng.Name == "postgres" {
				testenv.PostgresURL(b)
			}
			rs := openCounting(b, eng)
			ctx := context.Background()
			acc := benchAccount(b, rs)
			w := store.Write{Now: seedEpoch, Window: 5 * time.Minute}
			var n atomic.Int64
			b.SetParallelism((4 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					items := newPersons(100, func() int64 { return n.Add(1) })
					res, err := rs.UpsertPersons(ctx, acc, items, w)
					if err != nil {
						b.Error(err)
						return
					}
					for _, r := range res {
						if !r.Created {
							b.Error("an item was not created")
							return
						}
					}
				}
			})
			b.ReportMetric(float64(n.Load())/b.Elapsed().Seconds(), "persons/s")
		})
	}
}
