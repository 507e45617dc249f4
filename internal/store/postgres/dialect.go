package postgres

import (
	"database/sql"

	"github.com/pds-dev/pds/internal/store/sqlstore"
)

// Dialect is PostgreSQL's SQL where it differs: writers run in parallel, so
// a transaction locks the rows it reads before it changes them, and job
// claimers skip the rows another instance holds.
var Dialect = sqlstore.Dialect{
	Name:              "postgres",
	LockRows:          " FOR UPDATE",
	ShareRows:         " FOR SHARE",
	ClaimRows:         " FOR UPDATE SKIP LOCKED",
	ClaimDeliveryRows: " FOR UPDATE OF d SKIP LOCKED",
	InsertParams:      4096,
	// A statement named on one server session may be gone from the next
	// a pooler gives the connection (see connConfig).
	Statements: sqlstore.Unprepared,
	// Writers run in parallel.
	Writes: sqlstore.TxPerCall,
	// A round trip costs the most: create in one statement.
	Upserts:        sqlstore.CreateUnlessHeld,
	TagPairsAgg:    `json_agg(json_build_array(t.id, t.name) ORDER BY pt.created_at, t.id)`,
	FieldValuesAgg: `json_object_agg(f.key, v.value)`,
	// Its planner plans on what ANALYZE last measured; autovacuum would
	// catch up only a minute or so after a bulk write.
	AnalyzeTables: `ANALYZE`,
	// Plans made while persons was empty would pick the wrong index of
	// those led by account_id (see analyzePersons).
	AnalyzePersons: `ANALYZE persons`,
	// An append's update of persons stays on its page (HOT) only when no
	// index holds last_seen_at.
	SeenOrder: `person_seen`,
	// A WITH clause may write: statements are put together.
	Appends: sqlstore.AppendInOneStatement,
	Outbox:  sqlstore.OutboxCombined,
	// xmin is the transaction that wrote the row version a statement sees:
	// any later write of the row makes a version with another.
	RowVersion:  `xmin::text`,
	RefuseStale: `pds_refuse_stale()`,
	// The column's identity: its sequence numbers each person.
	NewPersonOrd: `DEFAULT`,
	// Numbers taken from that sequence, as a write that names none gets one.
	ImportOrds:    `SELECT nextval(pg_get_serial_sequence('persons', 'ord')) FROM generate_series(1, $1)`,
	ImportMarkOn:  `SELECT set_config('pds.import_writes', 'on', true)`,
	ImportMarkOff: `SELECT set_config('pds.import_writes', 'off', true)`,
	// A statement is a round trip: Get Person calls share one.
	Gets: sqlstore.BatchedGets,
	// A key of the schema's own: one fold transaction, or one import, of
	// the deployment holds it at a time, while those of other schemas of
	// the database (other deployments, other tests) go on.
	SerialFold: `SELECT pg_advisory_xact_lock(hashtextextended('pds tag bits of ' || current_schema(), 0))`,
	MergeJoinTags: `SELECT set_config('enable_hashjoin', 'off', true), set_config('enable_seqscan', 'off', true),
		set_config('max_parallel_workers_per_gather', '0', true)`,
	JoinsAsWritten: `SELECT set_config('join_collapse_limit', '1', true), set_config('enable_hashjoin', 'off', true),
		set_config('enable_mergejoin', 'off', true), set_config('enable_seqscan', 'off', true),
		set_config('enable_bitmapscan', 'off', true)`,
	// It seeks to a row value bound; it merges only bounded ranges.
	OpenRange: sqlstore.RowValueRange,
	MergeArms: sqlstore.BoundedArms,
	// Its planner chooses the join of the holders of several tags.
	TagWindows: sqlstore.JoinTags,
	// Writers run alongside the fold.
	Fold: sqlstore.FoldTaking,
	// Writers run in parallel: the import is one transaction.
	Import: sqlstore.ImportAtOnce,
	// READ COMMITTED would give each statement of a list its own snapshot.
	ReadSnapshot: &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true},
	// A batch is the transactions the cut sees and the base did not: those
	// the base saw running (its xip) and those after its xmax (migration
	// 00240); each branch walks person_changes_order from the position.
	// Each branch's start is one bound on (xid, seq), the later of the
	// position and the batch's own start: the xip branch descends the index
	// once per transaction listed, the other from the base's xmax or the
	// position. Given the position and a separate bound on xid, the index
	// scan starts at the position and walks every entry between them (a
	// page from the head of a long feed read a great many index pages for
	// its rows; with a filter on the xip list, the whole feed for none).
	// The page is ordered by the entries' xid8 (e.xid), never by the text
	// the select list makes of it, which sorts "1000" before "999".
	Changes: sqlstore.ChangeFeed{
		Page: `SELECT person_id, xid::text, seq, changed_at, deleted, merged_into FROM (
			(SELECT c.* FROM pg_snapshot_xip(COALESCE(NULLIF($2, ''), '1:1:')::pg_snapshot) AS x(xid)
				CROSS JOIN LATERAL (SELECT * FROM person_changes c WHERE c.account_id = $1 AND c.xid = x.xid
					AND c.seq > CASE WHEN x.xid = $4::xid8 THEN $5 ELSE -9223372036854775808 END ORDER BY c.seq LIMIT $6) c
				WHERE x.xid >= $4::xid8 AND pg_visible_in_snapshot(x.xid, $3::pg_snapshot)
				ORDER BY c.xid, c.seq LIMIT $6)
			UNION ALL
			(SELECT c.* FROM person_changes c WHERE c.account_id = $1
				AND (c.xid, c.seq) > (GREATEST($4::xid8, pg_snapshot_xmax(COALESCE(NULLIF($2, ''), '1:1:')::pg_snapshot)),
					CASE WHEN $4::xid8 < pg_snapshot_xmax(COALESCE(NULLIF($2, ''), '1:1:')::pg_snapshot) THEN -9223372036854775808 ELSE $5 END)
				AND c.xid < pg_snapshot_xmax($3::pg_snapshot) AND pg_visible_in_snapshot(c.xid, $3::pg_snapshot)
				ORDER BY c.xid, c.seq LIMIT $6)
		) e ORDER BY e.xid, e.seq LIMIT $6`,
		Cut: `SELECT pg_current_snapshot()::text`,
		// The reader's snapshot: what it saw is behind, what it did not
		// see (running, or later) ahead.
		Head: `SELECT pg_current_snapshot()::text, -1 WHERE $1 = $1`,
		// The transaction's own entries, numbered as one statement's.
		Reorder: []string{`UPDATE person_changes c SET seq = (SELECT nextval('person_change_seq')) * 16777216 + j.ord
			FROM jsonb_array_elements_text($2::jsonb) WITH ORDINALITY AS j(id, ord)
			WHERE c.account_id = $1 AND c.person_id = j.id AND c.xid = pg_current_xact_id()`},
		// A statement's number of its own, as the triggers take one.
		Touch: []string{`UPDATE person_changes SET xid = pg_current_xact_id(), seq = nextval('person_change_seq') * 16777216,
			changed_at = $3 WHERE account_id = $1 AND person_id = $2`},
	},
	Unavailable: unavailable,
	NoPrimary:   noPrimary,
	Writable:    writable,
	// A transactional message writes a WAL record and takes a transaction
	// id, so its commit waits for the synchronous standbys (an id alone
	// writes nothing, and waits for nothing); it changes no table.
	Confirm:  `SELECT pg_logical_emit_message(true, 'pds', 'confirm')`,
	Conflict: conflict,
	// The lock an UPDATE of a person takes anyway, taken first: it holds
	// off every other writer of the person, not the foreign-key checks of
	// breadcrumbs, links and values that refer to it.
	LockPerson: " FOR NO KEY UPDATE",
	// hashtextextended turns the key into the lock's 64-bit number.
	AccountLock: `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`,
	// Any number of instances serve from one database.
	Budgets: sqlstore.BudgetsInDatabase,
}
