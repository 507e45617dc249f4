package sqlstore

import (
	"strings"

	"github.com/pds-dev/pds/internal/domain"
)

// lockHolders runs only where writers run in parallel and lock persons
// (Dialect.LockPerson: PostgreSQL), so its statement is PostgreSQL's.

// holdersLockQuery is lockHolders' statement ("" when no item names an
// identifier). Each value is looked up on its own (OFFSET 0 keeps the
// planner from flattening the lookup into a join): an account that grew
// since its statistics were taken looks like a handful of rows to the
// planner, which then prefers reading the account's whole range of an index
// to probing the unique index once per value, at a cost that grows with the
// account. The rows are then locked through the primary key (= ANY of the
// ids found), however few the planner thinks. A value that is an alias
// (person_merge.go) finds its survivor, locked with the others: an upsert
// resolved through an alias writes the survivor.
func holdersLockQuery(accountID string, items []domain.Identifiers, lock string) (string, []any) {
	var columns [3][]string
	for _, ids := range items {
		for kind, v := range keys(ids) {
			if v != "" {
				columns[kind] = append(columns[kind], v)
			}
		}
	}
	var args sqlArgs
	account := args.add(accountID)
	var lookups []string
	for kind, column := range identifierColumns {
		if len(columns[kind]) > 0 {
			values := args.add(columns[kind])
			lookups = append(lookups, `SELECT h.id FROM unnest(`+values+`::text[]) AS v (x),
				LATERAL (SELECT id FROM persons WHERE account_id = `+account+` AND `+column+` = v.x OFFSET 0) AS h`,
				// The survivor a value resolves to as an alias: an item
				// naming it writes the survivor, which is locked here with
				// the holders, in their order, not later by the item alone.
				`SELECT h.id FROM unnest(`+values+`::text[]) AS v (x),
				LATERAL (SELECT person_id AS id FROM person_aliases WHERE account_id = `+account+`
					AND kind = '`+domain.AliasKinds[kind]+`' AND value = v.x OFFSET 0) AS h`)
		}
	}
	if len(lookups) == 0 {
		return "", nil
	}
	return `SELECT id FROM persons WHERE id = ANY (ARRAY(` + strings.Join(lookups, ` UNION ALL `) + `)) ORDER BY id` + lock, args
}
