package sqlstore_test

import (
	"context"
	"testing"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/testenv"
)

// BenchmarkListPersons reads pages of 100 persons (with their tags and
// custom field values) out of an account of 10,000, next to another account
// of 10,000, and reports the statements each page costs.
func BenchmarkListPersons(b *testing.B) {
	for _, eng := range testenv.Engines {
		b.Run(eng.Name, func(b *testing.B) {
			if eng.Name == "postgres" {
				testenv.PostgresURL(b)
			}
			rs := openCounting(b, eng)
			acc, tags := rs.seedAccount(b, 10_000)
			rs.seedAccount(b, 10_000)
			rs.analyze(b)
			since := seedEpoch
			for _, bc := range []struct {
				name string
				q    domain.PersonSelection
				page int
			}{
				{"window/first-page", domain.PersonSelection{Mode: domain.PersonWindow, Since: since}, 1},
				{"window/last-page", domain.PersonSelection{Mode: domain.PersonWindow, Since: since}, 100},
				{"window/two-tags", domain.PersonSelection{Mode: domain.PersonWindow, Since: since, TagIDs: []string{tags[0], tags[7]}}, 1},
				{"lookup/email", domain.PersonSelection{Mode: domain.PersonByEmail, Key: "P5000@seed.test"}, 1},
			} {
				b.Run(bc.name, func(b *testing.B) {
					ctx := context.Background()
					req := domain.PageRequest{Page: bc.page, Size: 100}
					b.ReportAllocs()
					var statementsRun int64
					for b.Loop() {
						statementsRun += rs.countStatements(func() {
							if _, _, err := rs.ListPersons(ctx, acc, bc.q, req); err != nil {
								b.Fatal(err)
							}
						})
					}
					b.ReportMetric(float64(statementsRun)/float64(b.N), "statements/op")
				})
			}
		})
	}
}
