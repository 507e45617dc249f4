package sqlstore

import (
	"context"

	"github.com/pds-dev/pds/internal/domain"
)

// ExportPersons reads one chunk of an export: a keyset read on id through
// persons_account_id (account_id, id), so that each chunk starts where the
// last one ended, however deep, then the chunk's tags and custom field
// values, all in one snapshot. The filters only drop rows of that walk: an
// index on last_seen_at would hand the rows over out of id order, to be
// sorted whole for every chunk. The bound on id is always there (after ""
// is before every id), so every chunk is the same range read.
//
// The tags and the values are read in one statement each for the whole
// chunk (exportDetails), walking the same range of persons with the same
// filters up to the chunk's last id, so that they belong to exactly the
// persons of the chunk: three statements a chunk (and JoinsAsWritten), where reading them a
// List page at a time (attachDetails) took twenty-one.
func (s *Store) ExportPersons(ctx context.Context, accountID string, sel domain.PersonExport, limit int) (_ []domain.Person, err error) {
	defer named("ExportPersons", &err)
	// One snapshot per chunk, so that each person's tags and values are
	// those of the row read; OpenExport reads every chunk in one.
	var persons []domain.Person
	err = s.safeReadTx(ctx, func(q querier) (err error) {
		persons, err = s.exportChunk(ctx, q, accountID, sel, limit)
		return err
	})
	return persons, err
}

// exportChunk reads one chunk of an export, and its details, in q's
// transaction.
func (s *Store) exportChunk(ctx context.Context, q querier, accountID string, sel domain.PersonExport, limit int) ([]domain.Person, error) {
	var args sqlArgs
	account := args.add(accountID)
	query := `SELECT ` + personColumns + ` FROM persons p WHERE ` + s.exportRange(&args, account, sel, "") +
		` ORDER BY p.account_id, p.id LIMIT ` + args.add(limit)
	persons, err := queryAll(ctx, q, scanPerson, query, args...)
	if err != nil {
		return nil, err
	}
	if err := s.exportDetails(ctx, q, accountID, sel, persons); err != nil {
		return nil, err
	}
	return persons, exportAliases(ctx, q, accountID, sel.After, persons)
}

// exportAliases attaches the aliases of a chunk's persons: one range of
// person_aliases_person over the chunk's ids (after to its last), in the
// chunk's snapshot. Aliases are few (one per identifier merged away), so
// the range holds few rows whatever the filters; those of persons the
// filters left out of the chunk are skipped here.
func exportAliases(ctx context.Context, q querier, accountID, after string, ps []domain.Person) error {
	if len(ps) == 0 {
		return nil
	}
	type owned struct {
		person string
		alias  domain.PersonAlias
	}
	rows, err := queryAll(ctx, q, func(sc scanner) (owned, error) {
		var (
			o  owned
			at int64
		)
		err := sc.Scan(&o.person, &o.alias.Kind, &o.alias.Value, &o.alias.From, &at)
		o.alias.DateMerged = domain.T(domain.FromMillis(at))
		return o, err
	}, `SELECT person_id, kind, value, from_id, merged_at FROM person_aliases
		WHERE account_id = $1 AND person_id > $2 AND person_id <= $3 ORDER BY person_id, merged_at, kind, value`,
		accountID, after, ps[len(ps)-1].ID)
	if err != nil || len(rows) == 0 {
		return err
	}
	byID := make(map[string]*domain.Person, len(ps))
	for i := range ps {
		byID[ps[i].ID] = &ps[i]
	}
	for _, o := range rows {
		if p := byID[o.person]; p != nil {
			p.Aliases = append(p.Aliases, o.alias)
		}
	}
	return nil
}

// exportRange is the condition on persons p of an export: the account's
// persons after sel.After, up to and including last when it is not "", that
// the filters select. account is the account's placeholder in args.
func (s *Store) exportRange(args *sqlArgs, account string, sel domain.PersonExport, last string) string {
	var where string
	if last == "" {
		where = s.dialect.OpenRange(args, account, sel.After)
	} else {
		// A closed range as scalars, which PostgreSQL seeks to and stops
		// at (as row values it walked the account, for every chunk).
		where = scalarRange(args, account, sel.After) + ` AND p.id <= ` + args.add(last)
	}
	if sel.UpdatedSince != nil {
		// The unary plus keeps the planner off persons_last_seen (see above).
		where += ` AND +p.last_seen_at >= ` + args.add(ceilMillis(*sel.UpdatedSince))
	}
	for _, tag := range dedupe(sel.TagIDs) {
		// A scalar subquery is one primary-key probe per person read.
		// PostgreSQL makes an EXISTS a semi-join, which may walk
		// person_tags from its first row for every chunk.
		where += ` AND (SELECT 1 FROM person_tags pt JOIN tags t ON t.id = pt.tag_id AND t.account_id = pt.account_id
			AND t.archived_at IS NULL WHERE pt.person_id = p.id AND pt.tag_id = ` + args.add(tag) + `) = 1`
	}
	return where
}

// exportDetails attaches the live tags and the live Person custom field
// values of a chunk's persons, read through the chunk's own range of
// persons (exportRange up to its last id), which selects exactly its
// persons in the same snapshot. Each person's tags come in the order
// attachDetails gives them: when attached, then by id.
func (s *Store) exportDetails(ctx context.Context, q querier, accountID string, sel domain.PersonExport, ps []domain.Person) error {
	if len(ps) == 0 {
		return nil
	}
	var args sqlArgs
	account := args.add(accountID)
	persons := s.exportRange(&args, account, sel, ps[len(ps)-1].ID)
	if s.dialect.JoinsAsWritten != "" {
		if _, err := q.exec(ctx, s.dialect.JoinsAsWritten); err != nil {
			return err
		}
	}
	// The joins are written in the order to walk them: the chunk's persons
	// in persons_account_id, then each one's rows by primary key (CROSS
	// JOIN holds SQLite to that order; JoinsAsWritten, PostgreSQL).
	return fillDetails(ctx, q, ps, args,
		`SELECT pt.person_id, t.id, t.name FROM persons p
		CROSS JOIN person_tags pt CROSS JOIN tags t
		WHERE `+persons+` AND pt.person_id = p.id AND pt.account_id = `+account+`
			AND t.id = pt.tag_id AND t.account_id = pt.account_id AND t.archived_at IS NULL
		ORDER BY pt.person_id, pt.created_at, t.id`,
		`SELECT v.person_id, f.key, v.value FROM persons p
		CROSS JOIN person_field_values v CROSS JOIN custom_fields f
		WHERE `+persons+` AND v.person_id = p.id AND v.account_id = `+account+`
			AND f.id = v.field_id AND f.account_id = v.account_id AND f.collection = 'Person' AND f.archived_at IS NULL`)
}

// RowValueRange is an export's open range (Dialect.OpenRange) as a row
// value with no equality on account_id, for a planner that seeks to such a
// bound in an index (PostgreSQL, which would serve "id > $2" from the
// primary key, across every account): the primary key cannot serve it,
// and PostgreSQL seeks to its start. Beside "account_id = $1" it walked
// from the account's first person instead, for every chunk, however deep.
// The two bounds hold the account: the row value puts account_id at or
// past it, the other at or before it.
func RowValueRange(args *sqlArgs, account, after string) string {
	return `(p.account_id, p.id) > (` + account + `, ` + args.add(after) + `) AND p.account_id <= ` + account
}

// ScalarRange is an export's open range (Dialect.OpenRange) as scalars,
// for a planner that reads a row value as a filter (SQLite).
var ScalarRange = scalarRange

// scalarRange is the account's persons p after after, as scalars.
func scalarRange(args *sqlArgs, account, after string) string {
	return `p.account_id = ` + account + ` AND p.id > ` + args.add(after)
}
