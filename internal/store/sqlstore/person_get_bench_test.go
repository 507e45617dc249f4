package sqlstore_test

import (
	"context"
	"testing"

	"github.com/pds-dev/pds/internal/testenv"
)

// BenchmarkGetPerson reads one person (three tags, three custom field
// values) out of an account of 10,000, from parallel goroutines, and
// reports the statements each read costs.
func BenchmarkGetPerson(b *testing.B) {
	for _, eng := range testenv.Engines {
		b.Run(eng.Name, func(b *testing.B) {
			if eng.Name == "postgres" {
				testenv.PostgresURL(b)
			}
			rs := openCounting(b, eng)
			acc, _ := rs.seedAccount(b, 10_000)
			rs.analyze(b)
			ctx := context.Background()
			id := seededPerson(acc, 3)
			statements := rs.countStatements(func() {
				if _, err := rs.GetPerson(ctx, acc, id); err != nil {
					b.Fatal(err)
				}
			})
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := rs.GetPerson(ctx, acc, id); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(statements), "statements/op")
		})
	}
}
