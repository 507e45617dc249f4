package sqlstore

import (
	"context"

	"github.com/pds-dev/pds/internal/domain"
)

// ExportPersons reads one chunk of an export: a keyset read on id through
// persons_account_id (account_id, id), so that each chunk starts where the
// last one ended, however deep, then the chunk's tags and custom field
// values, a page of persons at a time (attachDetails), all in one
// snapshot. The filters only drop rows of that walk: an index on
// last_seen_at would hand the rows over out of id order, to be sorted whole
// for every chunk. The bound on id is always there (after "" is before
// every id), so every chunk is the same range read.
func (s *Store) ExportPersons(ctx context.Context, accountID string, sel domain.PersonExport, limit int) ([]domain.Person, error) {
	var args sqlArgs
	account := args.add(accountID)
	query := `SELECT ` + personColumns + ` FROM persons p WHERE p.account_id = ` + account
	if s.dialect.RowValueRanges {
		query += ` AND (p.account_id, p.id) > (` + account + `, ` + args.add(sel.After) + `)`
	} else {
		query += ` AND p.id > ` + args.add(sel.After)
	}
	if sel.UpdatedSince != nil {
		// The unary plus keeps the planner off persons_last_seen (see above).
		query += ` AND +p.last_seen_at >= ` + args.add(ceilMillis(*sel.UpdatedSince))
	}
	for _, tag := range dedupe(sel.TagIDs) {
		// A scalar subquery is one primary-key probe per person read.
		// PostgreSQL makes an EXISTS a semi-join, which may walk
		// person_tags from its first row for every chunk.
		query += ` AND (SELECT 1 FROM person_tags pt JOIN tags t ON t.id = pt.tag_id AND t.account_id = pt.account_id
			AND t.archived_at IS NULL WHERE pt.person_id = p.id AND pt.tag_id = ` + args.add(tag) + `) = 1`
	}
	query += ` ORDER BY p.account_id, p.id LIMIT ` + args.add(limit)
	// One snapshot per chunk, so that each person's tags and values are
	// those of the row read.
	var persons []domain.Person
	err := s.inReadTx(ctx, func(q querier) (err error) {
		if persons, err = queryAll(ctx, q, scanPerson, query, args...); err != nil {
			return err
		}
		for start := 0; start < len(persons); start += detailsAtOnce {
			if err := attachDetails(ctx, q, accountID, persons[start:min(len(persons), start+detailsAtOnce)]); err != nil {
				return err
			}
		}
		return nil
	})
	return persons, err
}

// detailsAtOnce is how many persons' tags and values one query reads: the
// size of a List page, whose plans TestHotQueryPlans holds. With a thousand
// ids in its IN list, PostgreSQL reads the whole of person_tags rather than
// probe the primary key a thousand times, up to tables of a few hundred
// thousand rows.
const detailsAtOnce = 100
