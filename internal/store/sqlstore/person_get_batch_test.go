package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/testenv"
)

// TestConcurrentGetsAnswerEachCaller: many Get Person calls at once, so
// that PostgreSQL's fetcher reads them in shared statements: persons of two
// accounts, one account's person asked for under the other, the same
// person asked for twice in a round and an id nobody holds. Each caller gets
// exactly what it gets alone, and a person stays its own account's.
func TestConcurrentGetsAnswerEachCaller(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rs := openCounting(t, eng)
		a, _ := rs.seedAccount(t, 30)
		b, _ := rs.seedAccount(t, 30)
		ctx := context.Background()
		type ask struct{ account, id string }
		asks := make([]ask, 0, 96)
		held := map[ask]bool{}
		for i := range 96 {
			var k ask
			switch i % 4 {
			case 0:
				k = ask{a, seededPerson(a, i%30)}
				held[k] = true
			case 1:
				k = ask{b, seededPerson(b, i%7)} // each asked for several times
				held[k] = true
			case 2:
				k = ask{b, seededPerson(a, i%30)} // a's person, asked of b
			default:
				k = ask{a, fmt.Sprintf("per_missing_%d", i)}
			}
			asks = append(asks, k)
		}
		get := func(k ask) (*domain.Person, error) {
			p, err := rs.GetPerson(ctx, k.account, k.id)
			if errors.Is(err, domain.ErrNotFound) {
				return nil, nil
			}
			return p, err
		}
		// What each gets alone.
		want := make(map[ask]*domain.Person)
		for _, k := range asks {
			p, err := get(k)
			switch {
			case err != nil:
				t.Fatalf("alone, %v: %v", k, err)
			case (p != nil) != held[k]:
				t.Fatalf("alone, %v read %+v", k, p)
			case p != nil && (p.ID != k.id || len(p.TagIDs) != 3 || len(p.CustomFields) == 0):
				t.Fatalf("alone, %v read %+v", k, p)
			}
			want[k] = p
		}

		const rounds = 5
		statements := rs.countStatements(func() {
			for range rounds {
				var wg sync.WaitGroup
				for _, k := range asks {
					wg.Add(1)
					go func() {
						defer wg.Done()
						p, err := get(k)
						if err != nil {
							t.Errorf("%v: %v", k, err)
							return
						}
						if !reflect.DeepEqual(p, want[k]) {
							t.Errorf("%v: read %+v together, %+v alone", k, p, want[k])
						}
					}()
				}
				wg.Wait()
			}
		})
		if rs.ReadsPersonsTogether() && statements >= rounds*int64(len(asks)) {
			t.Errorf("%d gets at once ran %d statements: none were read together", rounds*len(asks), statements)
		}
	})
}
