package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/pds-dev/pds/internal/domain"
)

// testMergeBatches: batches that name survivors through their aliases
// lock them in the lock order, as those naming them by their own
// identifiers do. Two batches at once, one naming S1's own email and
// S2's alias, the other S2's own and S1's alias, would each hold one
// survivor and wait for the other if the aliases' survivors were not
// locked with the holders (lockHolders): every round lands on the
// survivors, creates no person, and (where the store counts them) no
// transaction is run again for a deadlock; nor for two merges of one pair
// in opposite directions. A store of its own, so that its retries are
// this case's.
func testMergeBatches(t *testing.T, newStore NewStore) {
	st := newStore(t)
	ctx := context.Background()
	c := newPersonCase(t, st)
	var survivors [2]*domain.Person
	for i := range survivors {
		s, _ := c.upsert(domain.PersonUpsert{Email: set(fmt.Sprintf("s%d@example.test", i))})
		dup, _ := c.upsert(domain.PersonUpsert{Email: set(fmt.Sprintf("dup%d@example.test", i))})
		survivors[i] = c.merge(s.ID, dup.ID)
	}
	retries := func() uint64 {
		if r, ok := st.(interface{ Retries() map[string]uint64 }); ok {
			return r.Retries()["deadlock"]
		}
		return 0
	}
	before := retries()
	const rounds = 40
	for round := range rounds {
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for w := range 2 {
			own, alias := w, 1-w
			items := []domain.PersonUpsert{
				{Email: set(fmt.Sprintf("dup%d@example.test", alias)), FirstName: set(fmt.Sprintf("round %d", round))},
				{Email: set(fmt.Sprintf("s%d@example.test", own)), LastName: set(fmt.Sprintf("round %d", round))},
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				results, err := st.UpsertPersons(ctx, c.acc, items, c.write())
				if err == nil {
					for i, r := range results {
						want := survivors[[]int{alias, own}[i]].ID
						switch {
						case r.Err != nil:
							err = r.Err
						case r.Created || r.Person.ID != want:
							err = fmt.Errorf("item %d landed on %s (created %v), want %s", i, r.Person.ID, r.Created, want)
						}
					}
				}
				errs[w] = err
			}()
		}
		wg.Wait()
		for w, err := range errs {
			if err != nil {
				t.Fatalf("round %d, batch %d: %v", round, w, err)
			}
		}
	}
	if n := c.counts(); n.Persons != 2 {
		t.Fatalf("%d persons after the batches, want the two survivors", n.Persons)
	}
	if n := retries() - before; n != 0 {
		t.Fatalf("%d transactions ran again after a deadlock: the aliases' survivors were locked out of order", n)
	}

	// Two merges of one pair in opposite directions at once lock the pair
	// in the same (id) order: one merges, the other finds its person
	// merged away, and neither deadlocks.
	for round := range rounds / 4 {
		x, _ := c.upsert(domain.PersonUpsert{Email: set(fmt.Sprintf("x%d@example.test", round))})
		y, _ := c.upsert(domain.PersonUpsert{Email: set(fmt.Sprintf("y%d@example.test", round))})
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for w, pair := range [][2]string{{x.ID, y.ID}, {y.ID, x.ID}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[w] = st.MergePersons(ctx, c.acc, pair[0], pair[1], c.write())
			}()
		}
		wg.Wait()
		merged := 0
		for _, err := range errs {
			switch {
			case err == nil:
				merged++
			case !isErr[*domain.MergedError](err):
				t.Fatalf("round %d: a merge in the other direction: %v, want merged or a merged id", round, err)
			}
		}
		if merged != 1 {
			t.Fatalf("round %d: %d merges of the pair succeeded (%v), want one", round, merged, errs)
		}
	}
	if n := retries() - before; n != 0 {
		t.Fatalf("%d transactions ran again after a deadlock: merges in opposite directions", n)
	}
}
