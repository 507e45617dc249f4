package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pds-dev/pds/internal/domain"
)

// testSuppressionRace erases persons with suppression while writers keep
// upserting, batching and appending breadcrumbs that name their email and
// external_id: a write may land before the erasure (and be erased with the
// person) or be refused after it, but no person is left holding a
// suppressed identifier once the erasure has answered, however the writers
// and the erasure interleave.
func testSuppressionRace(t *testing.T, newStore NewStore) {
	ctx := context.Background()
	st := newStore(t)
	c := newPersonCase(t, st)
	for round := range 12 {
		email, ext := fmt.Sprintf("raced%d@example.com", round), fmt.Sprintf("raced-%d", round)
		p, _ := c.upsert(domain.PersonUpsert{Email: setText(email), ExternalID: setText(ext)})
		var erased atomic.Bool
		var wg sync.WaitGroup
		write := func(fn func() error) {
			defer wg.Done()
			// Keep writing until a few writes have run after the erasure.
			for after := 0; after < 3; {
				if erased.Load() {
					after++
				}
				if err := fn(); err != nil {
					var se *domain.SuppressedError
					if !errors.As(err, &se) {
						t.Errorf("round %d: a write beside the erasure: %v", round, err)
						return
					}
				}
			}
		}
		wg.Add(4)
		go write(func() error {
			_, _, err := st.UpsertPerson(ctx, c.acc, domain.PersonUpsert{Email: setText(email), FirstName: setText("again")}, c.write())
			return err
		})
		go write(func() error {
			_, _, err := st.UpsertPerson(ctx, c.acc, domain.PersonUpsert{ExternalID: setText(ext), LastName: setText("again")}, c.write())
			return err
		})
		go write(func() error {
			res, err := st.UpsertPersons(ctx, c.acc, []domain.PersonUpsert{{Email: setText(email)}, {ExternalID: setText(ext)}}, c.write())
			for _, r := range res {
				var se *domain.SuppressedError
				if r.Err != nil && !errors.As(r.Err, &se) {
					return r.Err
				}
			}
			return err
		})
		go write(func() error {
			_, _, err := st.AppendBreadcrumb(ctx, c.acc, domain.BreadcrumbInput{Flavor: "click", Email: &email}, c.write())
			return err
		})
		if _, err := st.ErasePerson(ctx, c.acc, p.ID, domain.EraseRequest{Suppress: true, KeyID: "key_eraser"}, c.write()); err != nil {
			t.Fatalf("round %d: erase: %v", round, err)
		}
		erased.Store(true)
		wg.Wait()
		all, err := st.ExportPersons(ctx, c.acc, domain.PersonExport{}, 10000)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range all {
			if q.Email != nil && *q.Email == email || q.ExternalID != nil && *q.ExternalID == ext {
				t.Fatalf("round %d: person %s (first name %v) holds a suppressed identifier (email %v, external_id %v) after its erasure", round, q.ID, deref(q.FirstName),
					deref(q.Email), deref(q.ExternalID))
			}
		}
	}
}

// testSuppressedIdentifierNotHandedOver: P holds an email that writers
// keep giving to other persons, by Update Person and by an upsert matched
// on the other person's external_id, each refused while P holds it; P is
// erased with suppression meanwhile. The writers vouch, as the API does
// from a key read before the erasure, that the account suppresses nothing
// (store.Write.NoSuppressions): the store checks in the write's own
// transaction anyway, so no person holds the email once the erasure has
// answered.
func testSuppressedIdentifierNotHandedOver(t *testing.T, newStore NewStore) {
	ctx := context.Background()
	st := newStore(t)
	for round := range 6 {
		c := newPersonCase(t, st) // an account that has suppressed nothing yet
		w := c.write()
		w.NoSuppressions = true
		email := fmt.Sprintf("handed%d@example.com", round)
		p, _ := c.upsert(domain.PersonUpsert{Email: setText(email)})
		others := make([]string, 4)
		for i := range others {
			q, _ := c.upsert(domain.PersonUpsert{ExternalID: setText(fmt.Sprintf("other-%d", i))})
			others[i] = q.ID
		}
		var erased atomic.Bool
		var wg sync.WaitGroup
		for i, id := range others {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n, after := 0, 0; after < 3; n++ {
					if erased.Load() {
						after++
					}
					var err error
					if n%2 == 0 {
						_, err = st.UpdatePerson(ctx, c.acc, id, domain.PersonUpdate{Email: setText(email)}, w)
					} else {
						_, _, err = st.UpsertPerson(ctx, c.acc, domain.PersonUpsert{ExternalID: setText(fmt.Sprintf("other-%d", i)),
							Email: setText(email)}, w)
					}
					var se *domain.SuppressedError
					var ce *domain.ConflictError
					if err != nil && !errors.As(err, &se) && !errors.As(err, &ce) {
						t.Errorf("round %d: a write beside the erasure: %v", round, err)
						return
					}
				}
			}()
		}
		if _, err := st.ErasePerson(ctx, c.acc, p.ID, domain.EraseRequest{Suppress: true, KeyID: "key_eraser"}, c.write()); err != nil {
			t.Fatalf("round %d: erase: %v", round, err)
		}
		erased.Store(true)
		wg.Wait()
		got, _, err := st.ListPersons(ctx, c.acc, domain.PersonSelection{Mode: domain.PersonByEmail, Key: email}, domain.PageRequest{Page: 1, Size: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) > 0 {
			t.Fatalf("round %d: %s holds the email suppressed by the erasure", round, got[0].ID)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
