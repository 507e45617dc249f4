package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/pds-dev/pds/internal/domain"
)

// personWithDetailsSQL reads the persons p of from that where names with
// their live tags, in the order they were attached (then by id), and the
// values of their live Person custom fields, in one statement: two scalar
// subqueries aggregate them as JSON, each engine with its own aggregate
// functions (Dialect.TagPairsAgg, Dialect.FieldValuesAgg). A Get Person, or
// a lookup by email or external_id, is then one round trip on PostgreSQL
// and one read transaction on SQLite. extra follows the two aggregates.
func personWithDetailsSQL(d Dialect, from, where, extra string) string {
	return `SELECT ` + personColumns + `,
		COALESCE((SELECT ` + d.TagPairsAgg + ` FROM person_tags pt
			JOIN tags t ON t.id = pt.tag_id AND t.account_id = pt.account_id AND t.archived_at IS NULL
			WHERE pt.person_id = p.id AND pt.account_id = p.account_id), '[]'),
		COALESCE((SELECT ` + d.FieldValuesAgg + ` FROM person_field_values v
			JOIN custom_fields f ON f.id = v.field_id AND f.account_id = v.account_id
				AND f.collection = 'Person' AND f.archived_at IS NULL
			WHERE v.person_id = p.id AND v.account_id = p.account_id), '{}')` + extra + `
		FROM ` + from + ` WHERE ` + where
}

// personReads are the statements of personWithDetailsSQL a store runs.
type personReads struct {
	byID, byExternalID, byEmail string
}

func newPersonReads(d Dialect) personReads {
	one := func(cond string) string {
		return personWithDetailsSQL(d, `persons p`, `p.account_id = $1 AND `+cond, ``)
	}
	return personReads{byID: one(`p.id = $2`), byExternalID: one(`p.external_id = $2`), byEmail: one(`p.email_norm = $2`)}
}

// readPerson reads the person with id; sql.ErrNoRows when the account
// holds no such person.
func readPerson(ctx context.Context, q querier, accountID, id string) (*domain.Person, error) {
	return readPersonBy(ctx, q, q.s.personReads.byID, accountID, id)
}

// readPersonBy runs query, one of personReads, for key.
func readPersonBy(ctx context.Context, q querier, query, accountID, key string) (*domain.Person, error) {
	return scanPersonWithDetails(q.queryRow(ctx, query, accountID, key))
}

// scanPersonWithDetails scans a row of personWithDetailsSQL, then its
// extra columns into extra.
func scanPersonWithDetails(sc scanner, extra ...any) (*domain.Person, error) {
	var tags, values []byte
	p, err := scanPerson(withExtra{sc, append([]any{&tags, &values}, extra...)})
	if err != nil {
		return nil, err
	}
	// A person without tags or values (the aggregates' '[]' and '{}') is
	// the common case, and needs no decoder.
	var pairs [][2]string
	if string(tags) != "[]" {
		if err := json.Unmarshal(tags, &pairs); err != nil {
			return nil, fmt.Errorf("person %s: tags %q: %w", p.ID, tags, err)
		}
	}
	p.TagIDs, p.TagNames = make([]string, len(pairs)), make([]string, len(pairs))
	for i, pair := range pairs {
		p.TagIDs[i], p.TagNames[i] = pair[0], pair[1]
	}
	p.CustomFields = map[string]string{}
	if string(values) != "{}" {
		if err := json.Unmarshal(values, &p.CustomFields); err != nil {
			return nil, fmt.Errorf("person %s: custom field values %q: %w", p.ID, values, err)
		}
	}
	return &p, nil
}

// lookupPersons answers List Persons in a lookup mode. Its key is unique
// in the account (external_id, or email normalised), so the list holds one
// person or none: one statement reads it, and the total is whether it was
// found.
func lookupPersons(ctx context.Context, q querier, accountID string, sel domain.PersonSelection, p domain.PageRequest) ([]domain.Person, int, error) {
	if err := checkPage(p); err != nil {
		return nil, 0, err
	}
	query, key := q.s.personReads.byExternalID, sel.Key
	if sel.Mode == domain.PersonByEmail {
		query, key = q.s.personReads.byEmail, domain.NormEmail(sel.Key)
	}
	person, err := readPersonBy(ctx, q, query, accountID, key)
	if errors.Is(err, sql.ErrNoRows) {
		// An identifier of a person merged away finds its survivor, as
		// the survivor's own representation.
		person, err = lookupAlias(ctx, q, accountID, sel, key)
	}
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return []domain.Person{}, 0, nil
	case err != nil:
		return nil, 0, err
	case p.Offset() > 0:
		return []domain.Person{}, 1, nil
	}
	return []domain.Person{*person}, 1, nil
}

// withExtra scans a row into the destinations its caller names, then into
// extra: a row that has columns after the ones a scan function knows.
type withExtra struct {
	sc    scanner
	extra []any
}

func (w withExtra) Scan(dest ...any) error { return w.sc.Scan(append(dest, w.extra...)...) }

// PersonGets is how an engine reads Get Person's person (Dialect.Gets):
// OneByOne, a statement each, or BatchedGets, the calls that arrive while a
// batch is under way read as one statement (postgres_get_batch.go).
type PersonGets interface {
	// start makes the store's reader of persons.
	start(s *Store) personGetter
}

// personGetter reads one person of an account for GetPerson.
type personGetter interface {
	get(ctx context.Context, at readAt, accountID, id string) (*domain.Person, error)
	close()
}

// OneByOne reads each Get Person with a statement of its own: for an
// engine whose statements cost no round trip (SQLite).
var OneByOne PersonGets = oneByOne{}

type oneByOne struct{}

func (oneByOne) start(s *Store) personGetter { return direct{s} }

// direct is OneByOne's reader.
type direct struct{ s *Store }

func (d direct) get(ctx context.Context, _ readAt, accountID, id string) (*domain.Person, error) {
	return getPerson(ctx, d.s.reader(), accountID, id)
}

func (direct) close() {}

// lookupAlias reads the survivor a lookup's key resolves to through an
// alias; sql.ErrNoRows when it is none.
func lookupAlias(ctx context.Context, q querier, accountID string, sel domain.PersonSelection, key string) (*domain.Person, error) {
	kind := "external_id"
	if sel.Mode == domain.PersonByEmail {
		kind = "email"
	}
	owner, err := aliasOwner(ctx, q, accountID, kind, key)
	if err != nil {
		return nil, err
	}
	if owner == "" {
		return nil, sql.ErrNoRows
	}
	return readPerson(ctx, q, accountID, owner)
}
