package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// upsertBatch runs a batch that must not fail as a whole.
func (c *personCase) upsertBatch(items ...domain.PersonUpsert) []store.UpsertResult {
	c.t.Helper()
	res, err := c.st.UpsertPersons(context.Background(), c.acc, items, c.write())
	if err != nil {
		c.t.Fatalf("batch: %v", err)
	}
	if len(res) != len(items) {
		c.t.Fatalf("%d results for %d items", len(res), len(items))
	}
	return res
}

func testUpsertPersons(t *testing.T, newStore NewStore) {
	ctx := context.Background()

	t.Run("each item as UpsertPerson; a refused item undone alone; later items see earlier ones", func(t *testing.T) {
		t.Parallel()
		c := newPersonCase(t, newStore(t))
		c.field("Person", "age", "int")
		a, _ := c.upsert(domain.PersonUpsert{ExternalID: setText("a"), Email: setText("a@x.test")})
		b, _ := c.upsert(domain.PersonUpsert{Email: setText("b@x.test")})
		c.advance(time.Minute)

		res := c.upsertBatch(
			domain.PersonUpsert{ExternalID: setText("n"), FirstName: setText("One"), CustomFields: fieldValues(map[string]any{"age": 5})},
			domain.PersonUpsert{ExternalID: setText("a"), Email: setText("B@x.test"), FirstName: setText("Refused")}, // b holds it
			domain.PersonUpsert{ExternalID: setText("n"), LastName: setText("Two")},
			domain.PersonUpsert{Email: setText("new@x.test"), CustomFields: fieldValues(map[string]any{"age": "old"})},
			domain.PersonUpsert{ExternalID: setText("a"), FirstName: setText("Ann")},
			domain.PersonUpsert{ExternalID: setText("a"), FirstName: setText("Ann")},
		)
		n := res[0].Person
		if res[0].Err != nil || !res[0].Created || textOf(n.ExternalID) != "n" || n.CustomFields["age"] != "5" || !n.DateCreated.Equal(c.now()) {
			t.Fatalf("item 0: %+v", res[0])
		}
		wantPersonConflict(t, res[1].Err, b.ID)
		if res[2].Err != nil || res[2].Created || res[2].Person.ID != n.ID || textOf(res[2].Person.FirstName) != "One" ||
			textOf(res[2].Person.LastName) != "Two" || res[2].Person.CustomFields["age"] != "5" {
			t.Fatalf("item 2 (the person of item 0): %+v %+v", res[2], res[2].Person)
		}
		if !isErr[*domain.ValidationError](res[3].Err) || res[3].Person != nil {
			t.Fatalf("item 3: %+v", res[3])
		}
		if res[4].Err != nil || res[4].Person.ID != a.ID || res[4].Person.UpsertResult != domain.UpsertUpdated {
			t.Fatalf("item 4: %+v", res[4])
		}
		if res[5].Err != nil || res[5].Person.ID != a.ID || res[5].Created || res[5].Person.UpsertResult != domain.UpsertUnchanged {
			t.Fatalf("item 5 (changes nothing): %+v %+v", res[5], res[5].Person)
		}
		// The refused items left nothing behind.
		if got := c.get(a.ID); textOf(got.Email) != "a@x.test" || textOf(got.FirstName) != "Ann" {
			t.Fatalf("a: %+v", got)
		}
		if got := c.get(b.ID); !got.DateLastSeen.Equal(Epoch) {
			t.Fatalf("b was touched: %+v", got)
		}
		if got := c.allPersons(); len(got) != 3 {
			t.Fatalf("%d persons, want a, b and n", len(got))
		}
		// One burst per person, as single upserts make: n's began with its
		// creation, a's with the change.
		c.wantBurst(n.ID, domain.EventPersonCreated, c.now(), c.now())
		c.wantBurst(a.ID, domain.EventPersonCreated, Epoch, c.now())

		other := c.other()
		if got := other.upsertBatch(domain.PersonUpsert{ExternalID: setText("n")}); !got[0].Created || got[0].Person.ID == n.ID {
			t.Fatalf("another account's batch matched this account's person: %+v", got[0])
		}
	})

	t.Run("a batch of only refusals writes nothing; a clean batch of 100", func(t *testing.T) {
		t.Parallel()
		c := newPersonCase(t, newStore(t))
		a, _ := c.upsert(domain.PersonUpsert{ExternalID: setText("a"), Email: setText("a@x.test")})
		b, _ := c.upsert(domain.PersonUpsert{ExternalID: setText("b")})
		for _, r := range c.upsertBatch(
			domain.PersonUpsert{ExternalID: setText("b"), Email: setText("a@x.test")},
			domain.PersonUpsert{ExternalID: setText("a"), Email: setText("a@x.test"), CustomFields: fieldValues(map[string]any{"nope": 1})},
		) {
			if r.Err == nil {
				t.Fatalf("accepted %+v", r.Person)
			}
		}
		if got := c.get(b.ID); got.Email != nil || !got.DateLastSeen.Equal(Epoch) {
			t.Fatalf("b: %+v", got)
		}
		c.wantBurst(a.ID, domain.EventPersonCreated, Epoch, Epoch)

		items := make([]domain.PersonUpsert, 100)
		for i := range items {
			items[i] = domain.PersonUpsert{ExternalID: setText(fmt.Sprintf("p%d", i)), Email: setText(fmt.Sprintf("p%d@x.test", i))}
		}
		for i, r := range c.upsertBatch(items...) {
			if r.Err != nil || !r.Created || textOf(r.Person.ExternalID) != fmt.Sprintf("p%d", i) {
				t.Fatalf("item %d: %+v", i, r)
			}
		}
		if got := c.allPersons(); len(got) != 102 {
			t.Fatalf("%d persons after a batch of 100", len(got))
		}
	})

	t.Run("concurrent batches naming the same new persons make each once", func(t *testing.T) {
		t.Parallel()
		c := newPersonCase(t, newStore(t))
		items := make([]domain.PersonUpsert, 30)
		for i := range items {
			items[i] = domain.PersonUpsert{ExternalID: setText(fmt.Sprintf("p%d", i)), FirstName: setText("Same")}
		}
		// In the same order in each batch: a race on an identifier makes
		// the loser's item run again in its savepoint and match.
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for range 4 {
			wg.Go(func() {
				_, err := c.st.UpsertPersons(ctx, c.acc, items, c.write())
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("a concurrent batch failed: %v", err)
			}
		}
		if got := c.allPersons(); len(got) != len(items) {
			t.Fatalf("%d persons, want %d", len(got), len(items))
		}
	})

	t.Run("a batch whose context has ended writes nothing", func(t *testing.T) {
		t.Parallel()
		c := newPersonCase(t, newStore(t))
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := c.st.UpsertPersons(cancelled, c.acc, []domain.PersonUpsert{{ExternalID: setText("x")}}, c.write()); err == nil {
			t.Fatal("a cancelled batch succeeded")
		}
		if got := c.allPersons(); len(got) != 0 {
			t.Fatalf("a cancelled batch wrote %d persons", len(got))
		}
	})
}
