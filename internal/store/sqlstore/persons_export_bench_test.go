package sqlstore_test

import (
	"context"
	"testing"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/testenv"
)

// BenchmarkExportPersons reads a whole account of 20,000 persons (each
// with 3 tags and 3 custom field values), next to another account, in
// chunks of 1,000 as GET /persons/export does.
func BenchmarkExportPersons(b *testing.B) {
	for _, eng := range testenv.Engines {
		b.Run(eng.Name, func(b *testing.B) {
			if eng.Name == "postgres" {
				testenv.PostgresURL(b)
			}
			rs := openCounting(b, eng)
			acc, _ := rs.seedAccount(b, 20_000)
			rs.seedAccount(b, 5_000)
			rs.analyze(b)
			ctx := context.Background()
			for b.Loop() {
				sel, n := domain.PersonExport{}, 0
				for {
					chunk, err := rs.ExportPersons(ctx, acc, sel, 1000)
					if err != nil {
						b.Fatal(err)
					}
					n += len(chunk)
					if len(chunk) < 1000 {
						break
					}
					sel.After = chunk[len(chunk)-1].ID
				}
				if n != 20_000 {
					b.Fatalf("%d persons exported", n)
				}
			}
			b.ReportMetric(float64(b.N*20_000)/b.Elapsed().Seconds(), "persons/s")
		})
	}
}
