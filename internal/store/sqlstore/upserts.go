package sqlstore

import (
	"context"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/store"
)

// Upserts is what an Upsert Person does before its transaction, and a
// batch of them first in its own (Dialect.Upserts): CreateUnlessHeld
// (PostgreSQL, postgres_create.go) or LookUpBesideWriter (SQLite,
// sqlite_writes.go).
type Upserts interface {
	// start and stop start and stop what the store runs for it.
	start(s *Store)
	stop(s *Store)
	// first runs before the upsert's transaction. done says the upsert is
	// over, with err (*p and *created set as it ended); otherwise held,
	// when set, are the holders of in's identifiers for the transaction
	// to take (see upsertAndRecord).
	first(ctx context.Context, s *Store, accountID string, in domain.PersonUpsert, w store.Write,
		p **domain.Person, created *bool) (held *[]service.Holder, done bool, err error)
	// together runs a whole batch of items in q, when it can: it reports
	// whether it ran the batch, with results set (see UpsertPersons).
	together(ctx context.Context, s *Store, q querier, accountID string, items []domain.PersonUpsert, w store.Write,
		results []store.UpsertResult) (bool, error)
}

// Appends is how an append of a breadcrumb may skip its transaction
// (Dialect.Appends): AppendInOneStatement (PostgreSQL,
// postgres_append.go) or AppendInTx (SQLite, sqlite_writes.go).
type Appends interface {
	start(s *Store)
	stop(s *Store)
	// toHolder appends in to its identifier's holder in one statement,
	// when it can: ok says it did (see appendToHolder).
	toHolder(ctx context.Context, s *Store, accountID string, in domain.BreadcrumbInput, w store.Write) (b domain.Breadcrumb, ok bool, err error)
}

// Outbox is how a person write reaches its outbox row (Dialect.Outbox):
// OutboxCombined, the statements put together where a WITH clause may
// write (PostgreSQL, postgres_outbox.go), or OutboxApart, a statement each
// (SQLite, sqlite_writes.go). See recordChange.
type Outbox interface {
	// stampLocking runs update, the person's stamps, and reads its outbox
	// row locked, when it can: locked says it did.
	stampLocking(ctx context.Context, q querier, update string, args []any) (cur *service.Burst, locked bool, err error)
	// writeReading runs write, the outbox write, and reads the person back
	// when it can (nil when it did not).
	writeReading(ctx context.Context, q querier, write string, wargs sqlArgs, accountID, personID string) (*domain.Person, error)
}
