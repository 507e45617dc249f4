package store

import (
	"context"

	"github.com/pds-dev/pds/internal/domain"
)

// Erasures erases persons, keeps the record of erasures and the
// suppressions they leave.
type Erasures interface {
	// ErasePerson removes the person and everything held for it (its
	// identifiers become free, its tag links, custom values, breadcrumbs
	// and their idempotency records, its open burst and its pending
	// deliveries go, past attempts keep only their status, time and answer
	// code), records the erasure, queues a person.deleted delivery for each
	// active subscription listing it, and with in.Suppress keeps the
	// person's identifiers as keyed hashes. domain.ErrNotFound (as other
	// absent persons) when absent, foreign or erased before.
	ErasePerson(ctx context.Context, accountID, personID string, in domain.EraseRequest, w Write) (domain.Erasure, error)
	// ListSuppressions returns a page of the account's suppressions, newest
	// first, and the exact total.
	ListSuppressions(ctx context.Context, accountID string, p domain.PageRequest) ([]domain.Suppression, int, error)
	// FindSuppressions returns the account's suppressions of one
	// identifier, given in the forms a write naming it is checked in
	// (service.SuppressionLookup): those that would refuse it, newest
	// first; none when the account suppressed nothing. The identifier is
	// hashed under the account's secret and never stored.
	FindSuppressions(ctx context.Context, accountID string, values []domain.SuppressedValue) ([]domain.Suppression, error)
	// DeleteSuppression lifts one suppression; domain.ErrNotFound when absent.
	DeleteSuppression(ctx context.Context, accountID, id string) error
	// ListErasures returns a page of the account's erasures, newest first,
	// and the exact total.
	ListErasures(ctx context.Context, accountID string, p domain.PageRequest) ([]domain.Erasure, int, error)
}
