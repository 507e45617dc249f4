package sqlstore

import (
	"context"
	"errors"
	"slices"
	"strconv"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/store"
)

// UpsertPersons runs a batch of upserts in one transaction, each item in a
// savepoint of its own inside it: an item refused is undone alone, and each
// item sees the ones before it.
//
// A savepoint is not free: SQLite copies every page changed under it into
// its statement journal, which costs a batch of new persons about two
// thirds of its time, whether the savepoint is an item's or the one the
// group committer puts around each caller. So the batch first runs alone in
// its transaction (runAlone: no savepoint at all), and only when an item is
// refused, or loses a race on an identifier, is that transaction rolled
// back and the batch run again in a new one, each item in its own
// savepoint. A batch kept from the first run is what the second would have
// made, since no item's savepoint would have been rolled back.
func (s *Store) UpsertPersons(ctx context.Context, accountID string, items []domain.PersonUpsert, w store.Write) ([]store.UpsertResult, error) {
	// Each item is checked against the suppressions in the batch's
	// transaction, as a single upsert is; one refused runs the batch again
	// with savepoints, as any refused item does.
	items = slices.Clone(items)
	refused := map[int]error{}
	for i := range items {
		if err := items[i].Normalize(); err != nil {
			refused[i] = err
		}
	}
	if len(refused) > 0 {
		return s.upsertAllBut(ctx, accountID, items, w, refused)
	}
	s.warmSecret(ctx, accountID, w)
	results, err := s.upsertBatch(ctx, accountID, items, w, false)
	if errors.Is(err, errItemNeedsSavepoint) {
		results, err = s.upsertBatch(ctx, accountID, items, w, true)
	}
	if err != nil {
		return nil, err
	}
	return results, nil
}

// upsertAllBut runs the batch without the items refused before it ran,
// which store nothing and answer their refusal in their place.
func (s *Store) upsertAllBut(ctx context.Context, accountID string, items []domain.PersonUpsert, w store.Write, refused map[int]error) ([]store.UpsertResult, error) {
	var rest []domain.PersonUpsert
	for i, in := range items {
		if refused[i] == nil {
			rest = append(rest, in)
		}
	}
	var done []store.UpsertResult
	if len(rest) > 0 {
		var err error
		if done, err = s.UpsertPersons(ctx, accountID, rest, w); err != nil {
			return nil, err
		}
	}
	results := make([]store.UpsertResult, len(items))
	for i := range items {
		if refused[i] != nil {
			results[i] = store.UpsertResult{Err: refused[i]}
			continue
		}
		results[i], done = done[0], done[1:]
	}
	return results, nil
}

// upsertBatch runs the items in one transaction of their own, each in a
// savepoint when isolated is set.
func (s *Store) upsertBatch(ctx context.Context, accountID string, items []domain.PersonUpsert, w store.Write, isolated bool) ([]store.UpsertResult, error) {
	var results []store.UpsertResult
	ids := make([]domain.Identifiers, len(items))
	for i, in := range items {
		ids[i] = in.Identifiers()
	}
	err := s.inTxAlone(ctx, func(q querier) error {
		results = make([]store.UpsertResult, len(items))
		if err := lockHolders(ctx, q, accountID, ids); err != nil {
			return err
		}
		if !isolated {
			if done, err := s.createTogether(ctx, q, accountID, items, w, results); done || err != nil {
				if err != nil {
					return err
				}
				return reorderChanges(ctx, q, accountID, changedInOrder(results))
			}
		}
		if err := s.upsertItems(ctx, q, accountID, items, w, results, isolated); err != nil {
			return err
		}
		return reorderChanges(ctx, q, accountID, changedInOrder(results))
	})
	return results, err
}

// errItemNeedsSavepoint ends a run of a batch without item savepoints: an
// item was refused, or lost a race, and must be undone alone.
var errItemNeedsSavepoint = errors.New("sqlstore: an item of the batch needs a savepoint of its own")

// upsertItems runs the items in order into results, each in a savepoint of
// its own when isolated is set.
func (s *Store) upsertItems(ctx context.Context, q querier, accountID string, items []domain.PersonUpsert, w store.Write,
	results []store.UpsertResult, isolated bool) error {
	for i, in := range items {
		if !isolated {
			p, created, err := upsertWrite(ctx, q, accountID, in, w, nil)
			switch {
			case err == nil:
				results[i] = store.UpsertResult{Person: p, Created: created}
				continue
			case domain.IsRefusal(err) || s.isUnique(err):
				return errItemNeedsSavepoint
			default:
				return err
			}
		}
		r, err := s.upsertItem(ctx, q, accountID, in, w)
		if err != nil {
			return err
		}
		results[i] = r
	}
	return nil
}

// upsertItem runs one item in the savepoint "item". A refusal is the
// item's answer; a lost race on a unique identifier (PostgreSQL, concurrent
// writers) runs the item again, as UpsertPerson runs its transaction
// again; anything else fails the batch.
func (s *Store) upsertItem(ctx context.Context, q querier, accountID string, in domain.PersonUpsert, w store.Write) (store.UpsertResult, error) {
	for attempt := 1; ; attempt++ {
		if _, err := q.exec(ctx, `SAVEPOINT item`); err != nil {
			return store.UpsertResult{}, err
		}
		p, created, err := upsertWrite(ctx, q, accountID, in, w, nil)
		if err == nil {
			_, err = q.exec(ctx, `RELEASE item`)
			return store.UpsertResult{Person: p, Created: created}, err
		}
		if _, rbErr := q.exec(ctx, `ROLLBACK TO item`); rbErr != nil {
			return store.UpsertResult{}, rbErr
		}
		if _, rbErr := q.exec(ctx, `RELEASE item`); rbErr != nil {
			return store.UpsertResult{}, rbErr
		}
		switch {
		case domain.IsRefusal(err):
			return store.UpsertResult{Err: err}, nil
		case s.isUnique(err) && attempt < writeAttempts:
			continue
		default:
			return store.UpsertResult{}, err
		}
	}
}

// createTogether runs a batch whose items each name identifiers no other
// item names, and no custom field values, on an engine whose WITH clause
// may write (Dialect.ModifyingCTE): one statement per 64 items creates
// every item nobody holds the identifiers of, with its outbox row
// (createManyQuery, as concurrent single creates share), and gives the
// others their holders, upserted then in order as upsertItems would. Items
// with distinct identifiers do not touch each other's persons, so creating
// first commutes with matching. Five statements an item made a batch of new
// persons a few hundred round trips. It reports whether it ran the batch.
func (s *Store) createTogether(ctx context.Context, q querier, accountID string, items []domain.PersonUpsert, w store.Write,
	results []store.UpsertResult) (bool, error) {
	if !s.dialect.ModifyingCTE || !service.StampsFor(createdNew).Event {
		return false, nil
	}
	seen := map[[2]string]bool{}
	for _, in := range items {
		if len(in.CustomFields.Value) > 0 || !in.Identifiers().Any() {
			return false, nil
		}
		if values, err := service.CustomValueChanges(in.CustomFields, nil); err != nil || len(values) > 0 {
			return false, nil
		}
		for kind, v := range keys(in.Identifiers()) {
			k := [2]string{strconv.Itoa(kind), v}
			if v == "" {
				continue
			}
			if seen[k] {
				return false, nil
			}
			seen[k] = true
		}
	}
	calls := make([]*createCall, len(items))
	attrs := make([]attributes, len(items))
	ids := make([]string, len(items))
	for i, in := range items {
		attrs[i] = attributes{Identifiers: in.Identifiers(), firstName: in.FirstName.Ptr(), lastName: in.LastName.Ptr(), phone: in.Phone.Ptr()}
		ids[i] = domain.NewID(domain.PersonIDPrefix)
		calls[i] = newCreateCall(accountID, ids[i], attrs[i], w)
	}
	held := make([][]heldRow, len(items))
	for start := 0; start < len(calls); start += maxCreateBatch {
		chunk := calls[start:min(start+maxCreateBatch, len(calls))]
		query, args := createManyQuery(s.dialect, chunk, "")
		if err := s.createChunk(ctx, q, query, args, held[start:]); err != nil {
			if s.isUnique(err) {
				// Another writer made one of these persons meanwhile: item
				// by item, each in a savepoint, the batch matches it.
				return true, errItemNeedsSavepoint
			}
			return true, err
		}
	}
	for i, in := range items {
		if len(held[i]) == 0 {
			results[i] = store.UpsertResult{Person: createdPerson(ids[i], attrs[i], nil, w), Created: true}
			continue
		}
		holders := holdersOf(held[i])
		heldNow := &holders
		if markedSuppressing(held[i]) {
			heldNow = nil // the transaction looks up and checks
		}
		p, created, err := upsertWrite(ctx, q, accountID, in, w, heldNow)
		switch {
		case err == nil:
			results[i] = store.UpsertResult{Person: p, Created: created}
		case domain.IsRefusal(err) || s.isUnique(err):
			return true, errItemNeedsSavepoint
		default:
			return true, err
		}
	}
	return true, nil
}

// createChunk runs a createManyQuery and files each holder it answers
// under its call's number in held.
func (s *Store) createChunk(ctx context.Context, q querier, query string, args []any, held [][]heldRow) error {
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var n int
		r, err := scanHeld(rows, &n)
		if err != nil {
			return err
		}
		held[n] = addHeld(held[n], r)
	}
	return rows.Close()
}
