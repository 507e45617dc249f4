package webhook

import (
	"context"
	"encoding/json"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/personview"
)

// PersonSource reads what the extended person view is made of.
type PersonSource interface {
	GetPerson(ctx context.Context, accountID, id string) (*domain.Person, error)
	ListPersonFields(ctx context.Context, accountID string) ([]domain.CustomField, error)
}

// PersonRenderer renders a delivery's data: the person's extended view
// (spec section 2.9), the same object GET /persons/{id}?extended=true returns.
type PersonRenderer struct {
	Persons   PersonSource
	PublicURL string
}

// Render renders the person as it is now.
func (r PersonRenderer) Render(ctx context.Context, accountID, personID string, now time.Time) (json.RawMessage, error) {
	p, err := r.Persons.GetPerson(ctx, accountID, personID)
	if err != nil {
		return nil, err
	}
	fields, err := r.Persons.ListPersonFields(ctx, accountID)
	if err != nil {
		return nil, err
	}
	return json.Marshal(personview.Extended(p, fields, r.PublicURL, now))
}
