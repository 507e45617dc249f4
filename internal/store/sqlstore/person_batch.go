package sqlstore

import (
	"context"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// UpsertPersons runs a batch of upserts in one transaction (with group
// commit, one job of the committer), each item in a savepoint of its own
// inside it: an item refused is undone alone, and each item sees the ones
// before it. The transaction is retried whole only by the committer, so
// results are made afresh on each run.
func (s *Store) UpsertPersons(ctx context.Context, accountID string, items []domain.PersonUpsert, w store.Write) ([]store.UpsertResult, error) {
	var results []store.UpsertResult
	err := s.inTx(ctx, func(q querier) error {
		results = make([]store.UpsertResult, len(items))
		for i, in := range items {
			r, err := s.upsertItem(ctx, q, accountID, in, w)
			if err != nil {
				return err
			}
			results[i] = r
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return results, nil
}

// upsertItem runs one item of a batch in the savepoint "item", nested in
// the committer's own. A refusal is the item's answer; a lost race on a
// unique identifier (PostgreSQL, concurrent writers) runs the item again,
// as UpsertPerson runs its transaction again; anything else fails the
// batch.
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
