package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/pds-dev/pds/internal/domain"
)

// getPersonSQL reads one person with its live tags, in the order they were
// attached (then by id), and the values of its live Person custom fields,
// in one statement: two scalar subqueries aggregate them as JSON, each
// engine with its own aggregate functions (Dialect.TagPairsAgg,
// Dialect.FieldValuesAgg). A Get Person is then one round trip on
// PostgreSQL and one read transaction on SQLite.
func getPersonSQL(d Dialect) string {
	return `SELECT ` + personColumns + `,
		COALESCE((SELECT ` + d.TagPairsAgg + ` FROM person_tags pt
			JOIN tags t ON t.id = pt.tag_id AND t.account_id = pt.account_id AND t.archived_at IS NULL
			WHERE pt.person_id = p.id AND pt.account_id = p.account_id), '[]'),
		COALESCE((SELECT ` + d.FieldValuesAgg + ` FROM person_field_values v
			JOIN custom_fields f ON f.id = v.field_id AND f.account_id = v.account_id
				AND f.collection = 'Person' AND f.archived_at IS NULL
			WHERE v.person_id = p.id AND v.account_id = p.account_id), '{}')
		FROM persons p WHERE p.account_id = $1 AND p.id = $2`
}

// readPerson runs getPersonSQL; sql.ErrNoRows when the account holds no
// such person.
func readPerson(ctx context.Context, q querier, accountID, id string) (*domain.Person, error) {
	var tags, values []byte
	p, err := scanPerson(withExtra{q.queryRow(ctx, q.s.getPersonSQL, accountID, id), []any{&tags, &values}})
	if err != nil {
		return nil, err
	}
	var pairs [][2]string
	if err := json.Unmarshal(tags, &pairs); err != nil {
		return nil, fmt.Errorf("person %s: tags %q: %w", id, tags, err)
	}
	p.TagIDs, p.TagNames = make([]string, len(pairs)), make([]string, len(pairs))
	for i, pair := range pairs {
		p.TagIDs[i], p.TagNames[i] = pair[0], pair[1]
	}
	p.CustomFields = map[string]string{}
	if err := json.Unmarshal(values, &p.CustomFields); err != nil {
		return nil, fmt.Errorf("person %s: custom field values %q: %w", id, values, err)
	}
	return &p, nil
}

// withExtra scans a row into the destinations its caller names, then into
// extra: a row that has columns after the ones a scan function knows.
type withExtra struct {
	sc    scanner
	extra []any
}

func (w withExtra) Scan(dest ...any) error { return w.sc.Scan(append(dest, w.extra...)...) }
