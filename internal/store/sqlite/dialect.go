package sqlite

import "github.com/pds-dev/pds/internal/store/sqlstore"

// Dialect is SQLite's SQL where it differs. SQLite has no row locks: its
// single writer connection runs one write transaction at a time, which
// serialises every read-then-write and every claim already.
var Dialect = sqlstore.Dialect{
	Name:              "sqlite",
	LockRows:          "",
	ShareRows:         "",
	ClaimRows:         "",
	ClaimDeliveryRows: "",
	InsertParams:      1024,
	Budgets:           sqlstore.BudgetsInProcess,
	// Binding a numbered parameter walks the statement's list of names.
	Statements: sqlstore.BareParams,
	// SQLite's JSON functions; json_array keeps its JSON subtype only as
	// the direct argument of the aggregate.
	TagPairsAgg:    `json_group_array(json_array(t.id, t.name) ORDER BY pt.created_at, t.id)`,
	FieldValuesAgg: `json_group_object(f.key, v.value)`,
	// The planner needs no statistics for the import's lookups
	// (TestIdentifierLookupPlan): no AnalyzePersons.
	// Nor anything after an import: it plans by sqlite_stat1 alone, whose
	// rows migration 00010 wrote to describe accounts of a million persons,
	// and an import changes nothing there. ANALYZE, or PRAGMA optimize
	// (which after an import of 20,000 persons analyzes persons,
	// person_tags, tags, custom_fields and the empty breadcrumbs), would
	// replace them with a measure of the rows at hand, kept however the
	// tables grow until the next ANALYZE: the breadcrumbs as an empty
	// table, two tags read whole for a tag filter.
	AnalyzeTables: "",
	// Writes take turns on the one writer connection: run them together,
	// under one commit and one wait for the disk.
	Writes:  sqlstore.GroupCommit,
	Upserts: sqlstore.LookUpBesideWriter,
	// Statements cost it no round trip.
	Appends: sqlstore.AppendInTx,
	Outbox:  sqlstore.OutboxApart,
	// It probes one tag per holder of another; merging is linear.
	TagWindows: sqlstore.IntersectTags,
	// A statement costs no round trip: each Get Person reads its own.
	Gets: sqlstore.OneByOne,
	// The fold's transaction is the only writer.
	Fold: sqlstore.FoldAlone,
	// It reads a row value as a filter.
	OpenRange: sqlstore.ScalarRange,
	// It merges a union of ordered ranges itself.
	MergeArms: sqlstore.PlainArms,
	// One writer: nobody takes a number between the read and the insert.
	NewPersonOrd: `(SELECT COALESCE(MAX(ord), 0) + 1 FROM persons)`,
	// The import writes alone too.
	ImportOrds: `WITH RECURSIVE o(ord) AS (SELECT COALESCE(MAX(ord), 0) + 1 FROM persons
		UNION ALL SELECT ord + 1 FROM o LIMIT $1) SELECT ord FROM o`,
	// An erasure takes turns with the server's writes, a chunk of
	// breadcrumbs at a time, each chunk a short hold of the write lock.
	EraseChunk: 1000,
	// The import takes turns with the server's writes, a chunk at a time.
	Import:        sqlstore.ImportInChunks,
	ImportMarkOn:  `INSERT INTO import_writes (one) VALUES (1)`,
	ImportMarkOff: `DELETE FROM import_writes`,
	// A deferred transaction on a read-only connection keeps the snapshot
	// of its first read.
	ReadSnapshot: nil,
	// One writer: its numbers are commit order, and every change
	// committed is passed.
	Changes: sqlstore.ChangeFeed{
		Page: `SELECT person_id, '0', seq, changed_at, deleted, merged_into FROM person_changes
			WHERE account_id = $1 AND seq > $5 ORDER BY seq LIMIT $6`,
		Cut:  `SELECT ''`,
		Head: `SELECT '', COALESCE(MAX(seq), 0) FROM person_changes WHERE account_id = $1`,
		// An upsert driven by the list, not an UPDATE ... FROM: for that
		// join the planner scans the account's whole feed and the list
		// for each entry, which made even a modest import take far too
		// long. Every person of the list has its entry already, written by
		// the triggers in this transaction.
		Reorder: []string{
			`INSERT INTO person_changes (account_id, person_id, seq, changed_at)
			SELECT $1, j.value, (SELECT n FROM change_seq) + 1 + j.key, 0 FROM json_each($2) j WHERE true
			ON CONFLICT (account_id, person_id) DO UPDATE SET seq = excluded.seq`,
			`UPDATE change_seq SET n = n + json_array_length($2) WHERE $1 = $1`,
		},
		Touch: []string{
			`UPDATE change_seq SET n = n + 1 WHERE $1 = $1 AND $2 = $2 AND $3 = $3`,
			`UPDATE person_changes SET seq = (SELECT n FROM change_seq), changed_at = $3 WHERE account_id = $1 AND person_id = $2`,
		},
	},
	Unavailable: unavailable,
	Conflict:    conflict,
}
