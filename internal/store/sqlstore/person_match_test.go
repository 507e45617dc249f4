package sqlstore_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/testenv"
)

// TestMatchWrittenOnlyAsRead holds a matched upsert written in one statement
// (matchHeld, PostgreSQL) to the rows it decided on: when the person or its
// outbox row changes between the read and the write, the statement writes
// nothing and the upsert decides again in its transaction.
func TestMatchWrittenOnlyAsRead(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		if eng.Name != "postgres" {
			t.Skip("only an engine with row versions writes a match in one statement")
		}
		rs := openCounting(t, eng)
		acc, _ := rs.seedAccount(t, 3)
		ctx := context.Background()
		w := store.Write{Now: seedEpoch.Add(time.Hour), Window: time.Minute}
		made, _, err := rs.UpsertPerson(ctx, acc, domain.PersonUpsert{ExternalID: set("m-1"), FirstName: set("Ada")}, w)
		if err != nil {
			t.Fatal(err)
		}
		// between runs once, in the next match's gap.
		var ran int
		upsertWith := func(in domain.PersonUpsert, w store.Write, between func()) (*domain.Person, int64) {
			t.Helper()
			ran = 0
			rs.BeforeMatchWrite(func() {
				if ran++; ran == 1 && between != nil {
					between()
				}
			})
			defer rs.BeforeMatchWrite(nil)
			var p *domain.Person
			_, tx := rs.countRoundTrips(func() { p, _, err = rs.UpsertPerson(ctx, acc, in, w) })
			if err != nil {
				t.Fatal(err)
			}
			if got, err := rs.GetPerson(ctx, acc, made.ID); err != nil || !reflect.DeepEqual(got, p) {
				t.Fatalf("the upsert answered %+v, a read finds %+v (%v)", p, got, err)
			}
			return p, tx
		}

		// Nothing in between: one statement writes the match.
		w.Now = w.Now.Add(time.Second)
		p, tx := upsertWith(domain.PersonUpsert{ExternalID: set("m-1"), FirstName: set("Grace")}, w, nil)
		if ran != 1 || tx != 0 || p.UpsertResult != domain.UpsertUpdated || *p.FirstName != "Grace" {
			t.Fatalf("match alone: hook ran %d, %d transactions, %+v", ran, tx, p)
		}

		// The person changed in between. To what the upsert asks for: it
		// changes nothing, where a write decided on the row read before
		// would have stamped it updated. Away from what the upsert asks for,
		// after a read that found it so: it changes the person again.
		for _, c := range []struct{ between, want string }{{"Lin", domain.UpsertUnchanged}, {"Kim", domain.UpsertUpdated}} {
			w.Now = w.Now.Add(time.Second)
			p, tx = upsertWith(domain.PersonUpsert{ExternalID: set("m-1"), FirstName: set("Lin")}, w, func() {
				if _, err := rs.UpdatePerson(ctx, acc, made.ID, domain.PersonUpdate{FirstName: set(c.between)}, w); err != nil {
					t.Fatal(err)
				}
			})
			// Two transactions: the change in between, and the upsert's.
			if tx != 2 || p.UpsertResult != c.want || *p.FirstName != "Lin" {
				t.Fatalf("person changed to %s in between: %d transactions, %+v", c.between, tx, p)
			}
		}

		// The worker closed the person's burst in between: the outbox row
		// the statement would have changed is gone, so it must write neither
		// the person nor that row, and the transaction opens a new burst.
		w.Now = w.Now.Add(time.Hour)
		p, tx = upsertWith(domain.PersonUpsert{ExternalID: set("m-1"), LastName: set("Hopper")}, w, func() {
			rs.exec(t, `DELETE FROM bursts WHERE person_id = ?`, made.ID)
		})
		if tx != 1 || p.UpsertResult != domain.UpsertUpdated || *p.LastName != "Hopper" {
			t.Fatalf("burst closed in between: %d transactions, %+v", tx, p)
		}
		b, err := rs.PendingBurst(ctx, acc, made.ID)
		if err != nil || b.Event != domain.EventPersonUpdated || !b.OpenedAt.Equal(w.Now) {
			t.Fatalf("outbox row after a burst closed in between: %+v (%v), want one opened at %v", b, err, w.Now)
		}

		// The outbox row was rewritten in between: the burst slides on from
		// the row as it stands, not as it was read.
		w.Now = w.Now.Add(time.Second)
		p, tx = upsertWith(domain.PersonUpsert{ExternalID: set("m-1"), Phone: set("+1 555 0100")}, w, func() {
			rs.exec(t, `UPDATE bursts SET opened_at = opened_at - 1000 WHERE person_id = ?`, made.ID)
		})
		if tx != 1 || p.Phone == nil || *p.Phone != "+1 555 0100" {
			t.Fatalf("burst rewritten in between: %d transactions, %+v", tx, p)
		}
		opened := b.OpenedAt.Add(-time.Second)
		if b2, err := rs.PendingBurst(ctx, acc, made.ID); err != nil || !b2.DueAt.Equal(w.Now.Add(w.Window)) || !b2.OpenedAt.Equal(opened) {
			t.Fatalf("outbox row after it was rewritten in between: %+v (%v), want the burst of %v sliding to %v",
				b2, err, opened, w.Now.Add(w.Window))
		}

		// An upsert that changes nothing writes its stamp in one statement too.
		p, tx = upsertWith(domain.PersonUpsert{ExternalID: set("m-1"), Phone: set("+1 555 0100")}, w, nil)
		if tx != 0 || p.UpsertResult != domain.UpsertUnchanged {
			t.Fatalf("unchanged: %d transactions, %+v", tx, p)
		}
	})
}
