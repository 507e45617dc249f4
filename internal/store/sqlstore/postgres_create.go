package sqlstore

import (
	"context"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/store"
)

// createUnlessHeld is Upsert Person's create in one statement, for an
// engine whose WITH clause may write (CreateUnlessHeld): it looks up
// the holders of in's identifiers and, only when there are none, inserts
// the person and its outbox row. A statement outside a transaction commits
// on its own, so a new person costs one round trip instead of five (BEGIN,
// lookup, two inserts, COMMIT), which on PostgreSQL was most of its price.
//
// It returns the created person, or the holders it found, each with what
// a match decides on (for matchHeld, or the caller's transaction, to decide
// on as service.UpsertTarget does), or neither when
// the upsert needs more than this statement writes (custom field values):
// then the caller runs the whole upsert in a transaction. A concurrent
// create of the same identifier fails the insert unique, and the caller
// runs again, as for any person write (retryingUnique).
func (s *Store) createUnlessHeld(ctx context.Context, accountID string, in domain.PersonUpsert,
	w store.Write) (*domain.Person, *[]heldRow, error) {
	ids := in.Identifiers()
	// Custom field values are written by applyCustomValues, statement by
	// statement, in the transaction; checking them needs the account's
	// fields, read there too.
	if len(in.CustomFields.Value) > 0 || !ids.Any() {
		return nil, nil, nil
	}
	if values, err := service.CustomValueChanges(in.CustomFields, nil); err != nil || len(values) > 0 {
		return nil, nil, err
	}
	// The outbox row is what recordChange writes for a created person,
	// decided by the same rules; the statement only carries it.
	if !service.StampsFor(createdNew).Event {
		return nil, nil, nil
	}
	id := domain.NewID(domain.PersonIDPrefix)
	attrs := attributes{Identifiers: ids, firstName: in.FirstName.Ptr(), lastName: in.LastName.Ptr(), phone: in.Phone.Ptr()}
	call := newCreateCall(accountID, id, attrs, w)
	if err := s.creator.create(ctx, call); err != nil {
		return nil, nil, err
	}
	holders := call.holders
	if markedSuppressing(holders) {
		return nil, nil, nil
	}
	if len(holders) > 0 {
		return nil, &holders, nil
	}
	return createdPerson(id, attrs, nil, w), nil, nil
}

// createUnlessHeldQuery is createUnlessHeld's statement. Its lookup is
// holdersQuery's, each identifier on its own unique index; both inserts
// read the lookup's snapshot, so they run exactly when it found no one.
// It answers with the holders as heldSelect reads them. guard, when set,
// is one more condition of the insert, evaluated before its first row (a
// batch's lock timeout).
func createUnlessHeldQuery(d Dialect, accountID string, ids domain.Identifiers, person, burst []any, guard string) (string, []any) {
	holders, hargs := holdersQuery(accountID, ids, heldLookup(d, ``))
	args := sqlArgs(hargs)
	return `WITH h AS (` + holders + ` UNION ALL ` + suppressingMark(`$1`) + `),
		p AS (INSERT INTO persons (` + newPersonColumns + `) SELECT ` + args.list(person...) + `
			WHERE NOT EXISTS (SELECT 1 FROM h)` + guarded(guard) + ` RETURNING id),
		b AS (INSERT INTO bursts (` + newBurstColumns + `) SELECT ` + args.list(burst...) + ` FROM p)
		` + heldSelect(d, false), args
}

// suppressingMark is a holder with an empty id, answered while the
// account (an expression of its id) suppresses any identifier: a create in
// one statement cannot check identifiers against their keyed hashes, so it
// creates nothing then and leaves the person to a transaction, which checks
// in the statement of its look-up (holdersAndSuppressed). Read in the statement's own
// snapshot, it leaves no moment in which a suppression committed before
// the look-up goes unseen.
//
// An account with an alias (a merge's, person_merge.go) is marked too: the
// statement's look-up reads persons alone, and an identifier that is an
// alias must find its survivor, never a new person.
func suppressingMark(account string) string {
	return `SELECT '', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL WHERE EXISTS (SELECT 1 FROM suppressions WHERE account_id = ` + account + `)
		OR EXISTS (SELECT 1 FROM person_aliases WHERE account_id = ` + account + `)`
}

// markedSuppressing reports whether a create's holders hold the mark.
func markedSuppressing(held []heldRow) bool {
	for _, h := range held {
		if h.ID == "" {
			return true
		}
	}
	return false
}

// guarded is guard as one more condition of a WHERE ("" for none).
func guarded(guard string) string {
	if guard == "" {
		return ""
	}
	return ` AND ` + guard
}

// CreateUnlessHeld has an upsert create its person in one statement
// (createUnlessHeld), and decide on a holder it found in one more
// (matchHeld), before any transaction: for an engine whose WITH clause may
// write (PostgreSQL), where a round trip costs the most.
var CreateUnlessHeld Upserts = createFirst{}

type createFirst struct{}

func (createFirst) start(s *Store) { s.creator = startCreator(s) }
func (createFirst) stop(s *Store)  { s.creator.close() }

func (createFirst) together(ctx context.Context, s *Store, q querier, accountID string, items []domain.PersonUpsert,
	w store.Write, results []store.UpsertResult) (bool, error) {
	return s.createTogether(ctx, q, accountID, items, w, results)
}

func (createFirst) first(ctx context.Context, s *Store, accountID string, in domain.PersonUpsert, w store.Write,
	p **domain.Person, created *bool) (*[]service.Holder, bool, error) {
	made, found, err := s.createUnlessHeld(ctx, accountID, in, w)
	if err != nil || made != nil {
		*p, *created = made, made != nil
		return nil, true, err
	}
	if found == nil {
		return nil, false, nil
	}
	holders := holdersOf(*found)
	if *p, err = s.matchHeld(ctx, accountID, in, w, *found, holders); err != nil || *p != nil {
		return nil, true, err
	}
	return &holders, false, nil
}
