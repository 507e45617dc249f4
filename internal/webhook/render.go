package webhook

import (
	"context"
	"encoding/json"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/personview"
)

// PersonSource reads what the extended person view is made of
// (store.Persons).
type PersonSource interface {
	GetPerson(ctx context.Context, accountID, id string) (*domain.Person, error)
	// GetPersons reads many persons of one account at once; an id that is
	// absent is left out.
	GetPersons(ctx context.Context, accountID string, ids []string) (map[string]*domain.Person, error)
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

// RenderMany renders persons of one account as they are now, reading the
// account's custom fields once and the persons together (GetPersons): a
// closing batch's hundred persons were a hundred reads, a noticeable part
// of the delivery worker's CPU; a person that no longer exists is left
// out.
func (r PersonRenderer) RenderMany(ctx context.Context, accountID string, personIDs []string, now time.Time) (map[string]json.RawMessage, error) {
	fields, err := r.Persons.ListPersonFields(ctx, accountID)
	if err != nil {
		return nil, err
	}
	persons, err := r.Persons.GetPersons(ctx, accountID, personIDs)
	if err != nil {
		return nil, err
	}
	out := make(map[string]json.RawMessage, len(persons))
	for id, p := range persons {
		data, err := json.Marshal(personview.Extended(p, fields, r.PublicURL, now))
		if err != nil {
			return nil, err
		}
		out[id] = data
	}
	return out, nil
}
