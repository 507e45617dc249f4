package sqlstore

import (
	"context"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/store"
)

// LookUpBesideWriter has an upsert look its identifiers up on a reader
// before its transaction: for an engine with one writer (SQLite), whose
// time is what every write of the database waits for. When the read finds
// nobody holding the identifiers, the transaction creates without looking
// them up again; one taken meanwhile fails it unique, and it runs again
// from the read. (Holders found are read again in the transaction, which
// sees every commit before it: one may have moved.)
var LookUpBesideWriter Upserts = lookUpFirst{}

type lookUpFirst struct{}

func (lookUpFirst) first(ctx context.Context, s *Store, accountID string, in domain.PersonUpsert, _ store.Write,
	_ **domain.Person, _ *bool) (*[]service.Holder, bool, error) {
	holders, err := identifierHolders(ctx, s.reader(), accountID, in.Identifiers())
	if err != nil {
		return nil, true, err
	}
	if len(holders) == 0 {
		return &holders, false, nil
	}
	return nil, false, nil
}
