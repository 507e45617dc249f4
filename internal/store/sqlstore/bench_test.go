package sqlstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/testenv"
)

// BenchmarkListTags reads a page of 25 from an account holding 10,000 tags,
// a tenth of them archived, at the start and deep into the list.
func BenchmarkListTags(b *testing.B) {
	for _, eng := range testenv.Engines {
		b.Run(eng.Name, func(b *testing.B) {
			st := eng.NewStore(b)
			ctx := context.Background()
			acc := domain.NewID("acc")
			t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			if err := st.CreateAccount(ctx, domain.Account{ID: acc, Name: "bench", CreatedAt: t0}); err != nil {
				b.Fatal(err)
			}
			const n = 10000
			for i := range n {
				tag, _, err := st.CreateTag(ctx, domain.Tag{AccountID: acc, Name: fmt.Sprint("tag ", i), Context: domain.TagContexts[i%6],
					DateCreated: domain.T(t0.Add(time.Duration(i) * time.Second))})
				if err == nil && i%10 == 0 {
					err = st.ArchiveTag(ctx, acc, tag.ID, t0)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			person := "person"
			for _, c := range []struct {
				name    string
				context *string
				page    int
			}{{"first page", nil, 1}, {"page 300", nil, 300}, {"context filter", &person, 1}} {
				b.Run(c.name, func(b *testing.B) {
					for b.Loop() {
						items, total, err := st.ListTags(ctx, acc, c.context, domain.PageRequest{Page: c.page, Size: 25})
						if err != nil || total == 0 || len(items) != 25 {
							b.Fatalf("%d items of %d: %v", len(items), total, err)
						}
					}
				})
			}
		})
	}
}
