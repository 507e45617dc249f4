package sqlstore

import (
	"context"
	"errors"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// errErasureLanding answers the erasure methods until their
// implementation lands (the next commits of issue 48): the interface comes
// first so that the console can be built on it.
var errErasureLanding = errors.New("sqlstore: erasure is not implemented yet")

func (s *Store) ErasePerson(ctx context.Context, accountID, personID string, in domain.EraseRequest, w store.Write) (domain.Erasure, error) {
	return domain.Erasure{}, errErasureLanding
}

func (s *Store) ListSuppressions(ctx context.Context, accountID string, p domain.PageRequest) ([]domain.Suppression, int, error) {
	return nil, 0, errErasureLanding
}

func (s *Store) DeleteSuppression(ctx context.Context, accountID, id string) error {
	return errErasureLanding
}

func (s *Store) ListErasures(ctx context.Context, accountID string, p domain.PageRequest) ([]domain.Erasure, int, error) {
	return nil, 0, errErasureLanding
}
