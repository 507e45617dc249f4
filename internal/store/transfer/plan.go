// Package transfer copies a whole pds instance from one database to
// another (SQLite to PostgreSQL and back, or between two of one engine):
// every account with what it holds, its ids kept, read from one snapshot
// of the source and written into an empty target in one transaction.
//
// What each table of the schema gets is decided here, table by table
// (plan): copied as it is, renumbered (the change feed), rebuilt from what
// was copied (derived state the triggers of the migrations keep), or left
// to the target (state that belongs to a running instance). A table this
// plan does not name refuses the transfer, and a test holds the plan to
// each engine's migrations, so that a migration adding a table cannot be
// skipped unnoticed; the same holds for triggers (triggers).
package transfer

// action is what the transfer does with one table.
type action string

const (
	// copied: every row, every column, as the source holds it.
	copied action = "copied"
	// renumbered: every row, numbered again in the source's order.
	renumbered action = "renumbered"
	// rebuilt: derived from the tables copied, in the target.
	rebuilt action = "rebuilt"
	// notCarried: the target keeps its own (empty, or as migrated).
	notCarried action = "not carried"
)

// table is the plan for one table.
type table struct {
	name   string
	action action
	// only names the one engine that has the table ("" for both).
	only string
	// why says, for what is not copied, what the target holds instead.
	why string
}

// plan lists every table of both engines' schemas. The tables copied come
// in an order their foreign keys allow: each after those it refers to.
var plan = []table{
	{name: "accounts", action: copied},
	{name: "api_keys", action: copied},
	{name: "tags", action: copied},
	{name: "custom_fields", action: copied},
	{name: "projects", action: copied},
	{name: "campaigns", action: copied},
	{name: "persons", action: copied},
	{name: "person_tags", action: copied},
	{name: "person_field_values", action: copied},
	{name: "breadcrumbs", action: copied},
	{name: "webhooks", action: copied},
	{name: "webhook_secrets", action: copied},
	{name: "bursts", action: copied},
	{name: "deliveries", action: copied},
	{name: "delivery_attempts", action: copied},
	{name: "webhook_attempt_counts", action: copied},
	{name: "erasures", action: copied},
	{name: "suppression_secrets", action: copied},
	{name: "suppressions", action: copied},
	{name: "erasure_purges", action: copied},
	{name: "person_aliases", action: copied},
	{name: "person_merges", action: copied},
	{name: "delivered_states", action: copied},

	{name: "person_changes", action: renumbered,
		why: "the change feed, numbered again in the source's order; a feed cursor from the source does not carry over (read the feed again from its start)"},

	{name: "timeline_deltas", action: rebuilt, why: "none: the counts are derived whole"},
	{name: "timeline_counts", action: rebuilt, why: "counted again from persons and breadcrumbs"},
	{name: "tag_bit_deltas", action: rebuilt, why: "made again from the tag links"},
	{name: "tag_bits", action: rebuilt, why: "folded from the deltas made again"},
	{name: "person_seen", action: rebuilt, only: "postgres", why: "made again from persons"},
	{name: "change_seq", action: rebuilt, only: "sqlite", why: "set to the last number of the renumbered feed"},

	{name: "key_changes", action: notCarried, why: "the target's own counter: no server of the target has cached a key yet"},
	{name: "rate_windows", action: notCarried, why: "every key's rate budget starts a fresh window"},
	{name: "console_sessions", action: notCarried, why: "console sessions end: sign in to the target's console again"},
	{name: "console_links", action: notCarried, why: "unused sign-in links end: print another with pds console link"},
	{name: "served_public_url", action: notCarried, why: "the first pds serve on the target records its own"},
	{name: "import_writes", action: notCarried, only: "sqlite", why: "a marker that holds a row only inside an import's transaction"},
	{name: "goose_db_version", action: notCarried, why: "the target's own migrations"},
	{name: "pds_migration_lock", action: notCarried, only: "postgres", why: "the target's own migrations"},
}

// planned finds the plan of a table.
func planned(name string) (table, bool) {
	for _, t := range plan {
		if t.name == name {
			return t, true
		}
	}
	return table{}, false
}

// triggers are the triggers of both engines' migrations, with what the
// transfer does in their place. The transfer holds every trigger of the
// target while it copies (SQLite: dropped and created again in the same
// transaction; PostgreSQL: disabled and enabled again), so that a million
// rows do not fire them a row or a statement at a time, and rebuilds what
// they derive once the rows are in (rebuild). A trigger not named here
// refuses the transfer: whoever adds one says here what replaces it.
var triggers = map[string]string{
	// Timelines (00008, 00060, 00180): the counts derived again.
	"persons_timeline_insert":     "timeline_counts counted again from persons",
	"persons_timeline_update":     "fires on updates only; the transfer inserts",
	"breadcrumbs_timeline_insert": "timeline_counts counted again from breadcrumbs",
	"breadcrumbs_timeline_update": "fires on updates only; the transfer inserts",
	"persons_seen_moved":          "fires on updates only; person_tags.last_seen_at and person_seen are copied and made again",
	// The tag links' last-seen time (00009): copied with the links.
	"person_tags_seen": "fires on updates only; person_tags.last_seen_at is copied",
	// Tag bits (00050, 00070): deltas made again from the links.
	"person_tags_bits_insert": "tag_bit_deltas made again from person_tags and persons.ord",
	"person_tags_bits_delete": "fires on deletes only",
	"persons_ord":             "persons.ord is copied",
	// The key cache's counter and notifications (00021, 00150, 00160).
	"api_keys_changed":      "fires on updates only",
	"api_keys_deleted":      "fires on deletes only",
	"suppressions_inserted": "key_changes: no server of the target has cached a key yet",
	"suppressions_deleted":  "fires on deletes only",
	"suppressions_changed":  "key_changes: no server of the target has cached a key yet",
	// person_seen (00200): made again from persons.
	"person_seen_insert": "person_seen made again from persons",
	"person_seen_delete": "fires on deletes only",
	// The change feed (00240): renumbered from the source's.
	"person_changes_insert":       "person_changes renumbered from the source's",
	"person_changes_update":       "fires on updates only",
	"person_changes_delete":       "fires on deletes only",
	"person_changes_tag_insert":   "person_changes renumbered from the source's",
	"person_changes_tag_delete":   "fires on deletes only",
	"person_changes_value_insert": "person_changes renumbered from the source's",
	"person_changes_value_update": "fires on updates only",
	"person_changes_value_delete": "fires on deletes only",
}
