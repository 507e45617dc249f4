package sqlstore

import (
	"context"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/store"
)

// Upserts is what an Upsert Person does before its transaction
// (Dialect.Upserts): CreateUnlessHeld (PostgreSQL, postgres_create.go) or
// LookUpBesideWriter (SQLite, sqlite_upsert.go).
type Upserts interface {
	// first runs before the upsert's transaction. done says the upsert is
	// over, with err (*p and *created set as it ended); otherwise held,
	// when set, are the holders of in's identifiers for the transaction
	// to take (see upsertWrite).
	first(ctx context.Context, s *Store, accountID string, in domain.PersonUpsert, w store.Write,
		p **domain.Person, created *bool) (held *[]service.Holder, done bool, err error)
}
