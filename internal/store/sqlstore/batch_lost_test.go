package sqlstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/store/sqlstore"
	"github.com/pds-dev/pds/internal/store/storetest"
	"github.com/pds-dev/pds/internal/testenv"
)

// TestBatchesAfterALostCommit: every batch of the creator and the appender
// commits, and then hears of a lost connection, as when the connection
// dies at the commit, so that each of its calls runs alone after it. Each
// call still answers its own write as done, once: a new person as created
// (a 201, not a match onto itself), a breadcrumb as stored, once, on its
// holder (its id taken by its own first run was a unique violation, a
// 500).
func TestBatchesAfterALostCommit(t *testing.T) {
	t.Parallel()
	testenv.PostgresURL(t)
	st := testenv.Postgres.NewStore(t)
	st.(*sqlstore.Store).LoseBatchAnswers()
	ctx := context.Background()
	acc := storetest.NewAccount(t, st)
	str := func(s string) domain.Opt[string] { return domain.Opt[string]{Set: true, Value: s} }
	w := func() store.Write { return store.Write{Now: time.Now(), Window: time.Minute} }

	const n = 16
	ids := make([]string, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var wrong []string
	for i := range n {
		wg.Go(func() {
			p, created, err := st.UpsertPerson(ctx, acc, domain.PersonUpsert{ExternalID: str(fmt.Sprint("lost-", i))}, w())
			mu.Lock()
			defer mu.Unlock()
			if err != nil || !created {
				wrong = append(wrong, fmt.Sprintf("upsert %d: created %v, %v", i, created, err))
			}
			if err == nil {
				ids[i] = p.ID
			}
		})
	}
	wg.Wait()
	for i := range n {
		if ids[i] == "" {
			continue
		}
		wg.Go(func() {
			ext := fmt.Sprint("lost-", i)
			b, _, err := st.AppendBreadcrumb(ctx, acc, domain.BreadcrumbInput{Flavor: "page_view", ExternalID: &ext}, w())
			mu.Lock()
			defer mu.Unlock()
			if err != nil || b.PersonID != ids[i] {
				wrong = append(wrong, fmt.Sprintf("breadcrumb %d: on %q, want %q, %v", i, b.PersonID, ids[i], err))
			}
		})
	}
	wg.Wait()
	for _, s := range wrong {
		t.Error(s)
	}
	if _, total, err := st.ListBreadcrumbs(ctx, acc, domain.BreadcrumbFilter{}, domain.PageRequest{Page: 1, Size: 100}); err != nil || total != n {
		t.Fatalf("%d breadcrumbs stored (%v), want %d", total, err, n)
	}
}

// TestClaimWhoseAnswerWasLost: a claim of due bursts commits, then hears of
// a lost connection, so its worker holds none of what it leased. The next
// claim hands that lease back and takes the bursts at once, not after the
// lease (a minute) runs out.
func TestClaimWhoseAnswerWasLost(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		st := eng.NewStore(t)
		ctx := context.Background()
		acc := storetest.NewAccount(t, st)
		at := time.Now()
		for i := range 3 {
			if _, _, err := st.UpsertPerson(ctx, acc, domain.PersonUpsert{ExternalID: domain.Opt[string]{Set: true, Value: fmt.Sprint("c", i)}},
				store.Write{Now: at, Window: time.Second}); err != nil {
				t.Fatal(err)
			}
		}
		due := at.Add(time.Minute)
		st.(*sqlstore.Store).LoseNextClaimAnswer()
		if got, err := st.ClaimBursts(ctx, due, time.Hour, 10); err == nil {
			t.Fatalf("the claim whose answer was lost: %d bursts, no error", len(got))
		}
		got, err := st.ClaimBursts(ctx, due, time.Hour, 10)
		if err != nil || len(got) != 3 {
			t.Fatalf("the next claim: %d bursts, %v; want the 3 the lost claim leased", len(got), err)
		}
	})
}
