package sqlstore_test

import (
	"context"
	"fmt"
	"iter"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/testenv"
)

// BenchmarkImportPersons imports PDS_BENCH_PERSONS (default 20,000) new
// persons into a fresh account per run, a third of them holding one tag and
// a fifth another, and reports persons per second. Profile it with
// -cpuprofile to see where an import spends its time.
func BenchmarkImportPersons(b *testing.B) {
	n := 20_000
	if v, err := strconv.Atoi(os.Getenv("PDS_BENCH_PERSONS")); err == nil && v > 0 {
		n = v
	}
	for _, eng := range testenv.Engines {
		b.Run(eng.Name, func(b *testing.B) {
			st := eng.NewStore(b)
			ctx := context.Background()
			for b.Loop() {
				acc := domain.NewID("acc")
				if err := st.CreateAccount(ctx, domain.Account{ID: acc, Name: "bench", CreatedAt: time.Now()}); err != nil {
					b.Fatal(err)
				}
				tagA, _, err := st.CreateTag(ctx, domain.Tag{AccountID: acc, Name: "A", Context: "person", DateCreated: domain.T(time.Now())})
				if err != nil {
					b.Fatal(err)
				}
				tagB, _, err := st.CreateTag(ctx, domain.Tag{AccountID: acc, Name: "B", Context: "person", DateCreated: domain.T(time.Now())})
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				counts, err := st.ImportPersons(ctx, acc, benchLines(n, tagA.ID, tagB.ID), store.Write{Now: time.Now(), Window: time.Minute})
				if err != nil || counts.Created != n {
					b.Fatalf("%+v, %v", counts, err)
				}
				b.ReportMetric(float64(n)/time.Since(start).Seconds(), "persons/s")
			}
		})
	}
}

func benchLines(n int, tagA, tagB string) iter.Seq2[store.PersonImport, error] {
	return func(yield func(store.PersonImport, error) bool) {
		for i := range n {
			p := domain.PersonUpsert{
				ExternalID: domain.Opt[string]{Set: true, Value: fmt.Sprintf("ext-%d", i)},
				Email:      domain.Opt[string]{Set: true, Value: fmt.Sprintf("p%d@example.com", i)},
				FirstName:  domain.Opt[string]{Set: true, Value: fmt.Sprintf("First%d", i)},
				LastName:   domain.Opt[string]{Set: true, Value: "Last"},
			}
			var tags []string
			if i%3 == 0 {
				tags = append(tags, tagA)
			}
			if i%5 == 0 {
				tags = append(tags, tagB)
			}
			if !yield(store.PersonImport{Line: i + 1, Person: p, TagIDs: tags}, nil) {
				return
			}
		}
	}
}
