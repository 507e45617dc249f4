package sqlstore_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/testenv"
)

// TestTagWindowPagesFromBothEnds pages through a tag filter with a size
// that leaves the last page short. Pages past the middle are read from the
// far end and turned round (tagWindowPage); every page must still hold the
// next holders in list order, each once, and the pages together the total.
func TestTagWindowPagesFromBothEnds(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rs := openCounting(t, eng)
		rs.StopFolding()
		acc, tags := rs.seedAccount(t, 600)
		ctx := context.Background()
		sel := domain.PersonSelection{Mode: domain.PersonWindow, Since: seedEpoch.Add(-time.Hour), TagIDs: []string{tags[0], tags[7]}}
		var all []domain.Person
		total := -1
		for page := 1; ; page++ {
			got, n, err := rs.ListPersons(ctx, acc, sel, domain.PageRequest{Page: page, Size: 7})
			if err != nil {
				t.Fatal(err)
			}
			if total < 0 {
				total = n
			}
			if n != total {
				t.Fatalf("page %d: total %d, page 1 said %d", page, n, total)
			}
			if len(got) == 0 {
				break
			}
			all = append(all, got...)
		}
		if total < 30 || total%7 == 0 || len(all) != total {
			t.Fatalf("%d holders in the pages, total %d: want a total of at least 30 that leaves a short last page", len(all), total)
		}
		for i, p := range all {
			if !slices.Contains(p.TagIDs, tags[0]) || !slices.Contains(p.TagIDs, tags[7]) {
				t.Fatalf("item %d (%s) lacks a tag of the filter: %v", i, p.ID, p.TagIDs)
			}
			if i == 0 {
				continue
			}
			prev := all[i-1]
			if p.DateLastSeen.Before(prev.DateLastSeen) || p.DateLastSeen.Equal(prev.DateLastSeen) && p.ID <= prev.ID {
				t.Fatalf("item %d (%s, %v) does not follow item %d (%s, %v)", i, p.ID, p.DateLastSeen, i-1, prev.ID, prev.DateLastSeen)
			}
		}
	})
}
