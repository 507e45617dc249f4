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

func (lookUpFirst) start(*Store) {}
func (lookUpFirst) stop(*Store)  {}

// together: the batch's items run one by one, the one writer's statements
// costing no round trip.
func (lookUpFirst) together(context.Context, *Store, querier, string, []domain.PersonUpsert, store.Write,
	[]store.UpsertResult) (bool, error) {
	return false, nil
}

// AppendInTx runs every append of a breadcrumb in a transaction: on an
// engine with one writer a statement costs no round trip.
var AppendInTx Appends = appendInTx{}

type appendInTx struct{}

func (appendInTx) start(*Store) {}
func (appendInTx) stop(*Store)  {}

func (appendInTx) toHolder(context.Context, *Store, string, domain.BreadcrumbInput, store.Write) (domain.Breadcrumb, bool, error) {
	return domain.Breadcrumb{}, false, nil
}

// OutboxApart writes a person's stamps, its outbox row and its read back
// each as a statement of its own: on an engine with one writer they cost
// no round trips.
var OutboxApart Outbox = outboxApart{}

type outboxApart struct{}

func (outboxApart) stampLocking(ctx context.Context, q querier, update string, args []any) (*service.Burst, bool, error) {
	_, err := q.exec(ctx, update, args...)
	return nil, false, err
}

func (outboxApart) writeReading(ctx context.Context, q querier, write string, wargs sqlArgs, _, _ string) (*domain.Person, error) {
	_, err := q.exec(ctx, write, wargs...)
	return nil, err
}
