package sqlstore

import (
	"context"
	"errors"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// UpsertPersons runs a batch of upserts in one transaction (with group
// commit, one job of the committer), each item in a savepoint of its own
// inside it: an item refused is undone alone, and each item sees the ones
// before it.
//
// A savepoint per item is not free: SQLite copies every page an item
// changes into its statement journal, and frees that copy when the item's
// savepoint is released, which costs a batch of new persons most of its
// time. So the items first run together in one savepoint, and only when one
// of them is refused (or loses a race on an identifier) does the batch roll
// back to it and run again, each item in its own savepoint. A batch kept
// from the first run is what the second would have made, since no item's
// savepoint would have been rolled back.
func (s *Store) UpsertPersons(ctx context.Context, accountID string, items []domain.PersonUpsert, w store.Write) ([]store.UpsertResult, error) {
	var results []store.UpsertResult
	// The committer may run a transaction again: results are made afresh.
	err := s.inTx(ctx, func(q querier) (err error) {
		results = make([]store.UpsertResult, len(items))
		if _, err := q.exec(ctx, `SAVEPOINT batch`); err != nil {
			return err
		}
		err = s.upsertItems(ctx, q, accountID, items, w, results, false)
		if errors.Is(err, errItemNeedsSavepoint) {
			if _, err := q.exec(ctx, `ROLLBACK TO batch`); err != nil {
				return err
			}
			err = s.upsertItems(ctx, q, accountID, items, w, results, true)
		}
		if err != nil {
			return err
		}
		_, err = q.exec(ctx, `RELEASE batch`)
		return err
	})
	if err != nil {
		return nil, err
	}
	return results, nil
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
			p, created, err := upsertWrite(ctx, q, accountID, in, w)
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
		p, created, err := upsertWrite(ctx, q, accountID, in, w)
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
