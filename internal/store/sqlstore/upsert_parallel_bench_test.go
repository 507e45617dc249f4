package sqlstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/testenv"
)

// BenchmarkUpsertPersonParallel creates a new person per call from
// 16 goroutines per CPU, as concurrent requests do: on SQLite every write
// goes through the one writer connection, so this measures how many
// durable commits per second the write path gets out of it.
func BenchmarkUpsertPersonParallel(b *testing.B) {
	for _, eng := range testenv.Engines {
		b.Run(eng.Name, func(b *testing.B) {
			if eng.Name == "postgres" {
				testenv.PostgresURL(b)
			}
			st := eng.NewStore(b)
			ctx := context.Background()
			acc := benchAccount(b, st)
			var n atomic.Int64
			b.SetParallelism(16)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := n.Add(1)
					in := domain.PersonUpsert{
						Email:     domain.Opt[string]{Set: true, Value: fmt.Sprintf("p%d@bench.test", i)},
						FirstName: domain.Opt[string]{Set: true, Value: "Bench"},
					}
					if _, _, err := st.UpsertPerson(ctx, acc, in, store.Write{Now: seedEpoch, Window: time.Minute}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
