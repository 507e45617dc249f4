package sqlstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/testenv"
)

func set(v string) domain.Opt[string] { return domain.Opt[string]{Set: true, Value: v} }

// TestUpsertCreateRoundTrips holds a new person on PostgreSQL to one
// statement and no transaction (createUnlessHeld, alone in its batch when
// nothing else is being created), with its outbox row as
// any created person's, and keeps every other upsert on the transaction.
func TestUpsertCreateRoundTrips(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rs := openCounting(t, eng)
		acc, _ := rs.seedAccount(t, 10)
		ctx := context.Background()
		// As the API writes for a key whose account suppresses nothing
		// (store.Write.NoSuppressions): no read of the secret beside it.
		w := store.Write{Now: seedEpoch.Add(time.Hour), Window: time.Minute, NoSuppressions: true}
		upsert := func(in domain.PersonUpsert) (*domain.Person, bool, int64, int64) {
			t.Helper()
			var (
				p       *domain.Person
				created bool
				err     error
			)
			n, tx := rs.countRoundTrips(func() { p, created, err = rs.UpsertPerson(ctx, acc, in, w) })
			if err != nil {
				t.Fatal(err)
			}
			return p, created, n, tx
		}

		// The creator sets up its connection (creator.connection) once, with
		// the first new person.
		upsert(domain.PersonUpsert{ExternalID: set("first")})
		p, created, n, tx := upsert(domain.PersonUpsert{ExternalID: set("new-1"), Email: set("New@x.test"), FirstName: set("Ada")})
		if !created || p.UpsertResult != domain.UpsertCreated || *p.FirstName != "Ada" {
			t.Fatalf("created %v: %+v", created, p)
		}
		if eng.Name == "postgres" && (n != 1 || tx != 0) {
			t.Errorf("a new person took %d statements in %d transactions, want 1 in none", n, tx)
		}
		got, err := rs.GetPerson(ctx, acc, p.ID)
		if err != nil || *got.Email != "new@x.test" || *got.ExternalID != "new-1" || got.DateCreated != p.DateCreated {
			t.Fatalf("read back %+v (%v), want %+v", got, err, p)
		}
		b, err := rs.PendingBurst(ctx, acc, p.ID)
		if err != nil || b.Event != domain.EventPersonCreated || !b.OpenedAt.Equal(w.Now) || !b.DueAt.Equal(w.Now.Add(w.Window)) {
			t.Fatalf("outbox row of the new person: %+v (%v)", b, err)
		}

		// Matched by email: decided on the holders the statement found.
		// On PostgreSQL that is two statements and no transaction: the
		// create that found the holder and its outbox row, and the write of
		// both that also reads the person back (matchHeld).
		p2, created, n, tx := upsert(domain.PersonUpsert{Email: set("new@X.test"), LastName: set("Lovelace")})
		if created || p2.ID != p.ID || *p2.LastName != "Lovelace" || p2.UpsertResult != domain.UpsertUpdated ||
			!p2.DateLastSeen.Equal(w.Now) || *p2.Email != "new@x.test" || *p2.FirstName != "Ada" {
			t.Fatalf("match: created %v, %+v", created, p2)
		}
		if eng.Name == "postgres" && (n != 2 || tx != 0) {
			t.Errorf("a match took %d statements in %d transactions, want 2 in none", n, tx)
		}
		if eng.Name == "sqlite" && tx != 1 {
			t.Errorf("a match ran in %d transactions, want 1", tx)
		}
		if got, err := rs.GetPerson(ctx, acc, p.ID); err != nil || !reflect.DeepEqual(got, p2) {
			t.Fatalf("the match answered %+v, a read finds %+v (%v)", p2, got, err)
		}

		// Two holders: the 409 as before, and nothing written.
		other, _, _, _ := upsert(domain.PersonUpsert{ExternalID: set("new-2")})
		_, _, err = rs.UpsertPerson(ctx, acc, domain.PersonUpsert{ExternalID: set("new-2"), Email: set("new@x.test")}, w)
		var conflict *domain.ConflictError
		if !errors.As(err, &conflict) || conflict.ExistingID != p.ID {
			t.Fatalf("upsert onto another holder's email: %v, want a 409 naming %s", err, p.ID)
		}
		if again, _ := rs.GetPerson(ctx, acc, other.ID); again.Email != nil {
			t.Fatalf("the refused upsert wrote %+v", again)
		}

		// Custom field values are written in the transaction.
		cf := domain.Opt[map[string]json.RawMessage]{Set: true, Value: map[string]json.RawMessage{"field_1": json.RawMessage(`"blue"`)}}
		p3, created, _, tx := upsert(domain.PersonUpsert{ExternalID: set("new-3"), CustomFields: cf})
		if !created || p3.CustomFields["field_1"] != "blue" || tx != 1 {
			t.Fatalf("create with custom fields: created %v in %d transactions, %+v", created, tx, p3)
		}
		if got, _ := rs.GetPerson(ctx, acc, p3.ID); got.CustomFields["field_1"] != "blue" {
			t.Fatalf("custom field value not stored: %+v", got.CustomFields)
		}
		if b, err := rs.PendingBurst(ctx, acc, p3.ID); err != nil || b.Event != domain.EventPersonCreated {
			t.Fatalf("outbox row of a person created with values: %+v (%v)", b, err)
		}
	})
}

// TestUpsertCreateRace runs concurrent creates of one email: at most one
// person is created and every other upsert matches it, or, when it also
// gives the external_id another person holds, gets the 409 (or moves the
// email onto that person, when it comes first). No lost race surfaces.
func TestUpsertCreateRace(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rs := openCounting(t, eng)
		acc, _ := rs.seedAccount(t, 1)
		ctx := context.Background()
		w := store.Write{Now: seedEpoch.Add(time.Hour), Window: time.Minute}
		for round := range 6 {
			email := fmt.Sprintf("race%d@x.test", round)
			// Odd rounds: half the writers also give the external_id of a
			// person made for the round.
			held := ""
			if round%2 == 1 {
				held = fmt.Sprintf("held-%d", round)
				if _, _, err := rs.UpsertPerson(ctx, acc, domain.PersonUpsert{ExternalID: set(held)}, w); err != nil {
					t.Fatal(err)
				}
			}
			const writers = 8
			var (
				wg      sync.WaitGroup
				mu      sync.Mutex
				ids     = map[string]bool{}
				creates int
			)
			for i := range writers {
				wg.Go(func() {
					in := domain.PersonUpsert{Email: set(email)}
					giveHeld := held != "" && i%2 == 1
					if giveHeld {
						in.ExternalID = set(held)
					}
					p, created, err := rs.UpsertPerson(ctx, acc, in, w)
					mu.Lock()
					defer mu.Unlock()
					var conflict *domain.ConflictError
					switch {
					case errors.As(err, &conflict) && giveHeld:
					case err != nil:
						t.Errorf("round %d, writer %d: %v", round, i, err)
					default:
						ids[p.ID] = true
						if created {
							creates++
						}
					}
				})
			}
			wg.Wait()
			got, _, err := rs.ListPersons(ctx, acc, domain.PersonSelection{Mode: domain.PersonByEmail, Key: email}, domain.PageRequest{Page: 1, Size: 10})
			if err != nil || len(got) != 1 {
				t.Fatalf("round %d: %d persons hold the email (%v)", round, len(got), err)
			}
			if creates > 1 || len(ids) != 1 || !ids[got[0].ID] {
				t.Fatalf("round %d: %d created, upserts answered %v; want at most one created and every upsert on %s",
					round, creates, ids, got[0].ID)
			}
			if held == "" && creates != 1 {
				t.Fatalf("round %d: %d created, want 1", round, creates)
			}
			if b, err := rs.PendingBurst(ctx, acc, got[0].ID); err != nil || b.PersonID != got[0].ID {
				t.Fatalf("round %d: outbox row %+v (%v)", round, b, err)
			}
		}
	})
}
