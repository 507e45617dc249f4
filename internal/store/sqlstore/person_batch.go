package sqlstore

import (
	"context"
	"errors"
	"slices"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// UpsertPersons runs a batch of upserts in one transaction, each item in a
// savepoint of its own inside it: an item refused is undone alone, and each
// item sees the ones before it.
//
// A savepoint is not free: SQLite copies every page changed under it into
// its statement journal, which costs a batch of new persons most of its
// time, whether the savepoint is an item's or the one the group committer
// puts around each caller. So the batch first runs alone in
// its transaction (runAlone: no savepoint at all), and only when an item is
// refused, or loses a race on an identifier, is that transaction rolled
// back and the batch run again in a new one, each item in its own
// savepoint. A batch kept from the first run is what the second would have
// made, since no item's savepoint would have been rolled back.
func (s *Store) UpsertPersons(ctx context.Context, accountID string, items []domain.PersonUpsert, w store.Write) (_ []store.UpsertResult, err error) {
	defer named("UpsertPersons", &err)
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
			if done, err := s.dialect.Upserts.together(ctx, s, q, accountID, items, w, results); done || err != nil {
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
			p, created, err := upsertAndRecord(ctx, q, accountID, in, w, nil)
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
		p, created, err := upsertAndRecord(ctx, q, accountID, in, w, nil)
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
