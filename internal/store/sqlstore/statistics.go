package sqlstore

import (
	"context"
	"slices"
	"strings"
	"time"
)

// personImportTables are the tables pds import persons writes: the persons
// and their values, links and outbox rows; the tag bits and timeline deltas
// it writes itself (writeDerived) or its matched lines' triggers write; and
// the timeline counts its fold moves the deltas into; the change feed,
// which every person written enters.
var personImportTables = []string{"persons", "person_field_values", "person_tags", "bursts",
	"tag_bits", "tag_bit_deltas", "timeline_deltas", "timeline_counts", "person_changes"}

// personImportTablesOf is personImportTables and, where the dialect keeps
// one, the table its triggers write as they write persons (SeenOrder).
func (d Dialect) personImportTablesOf() []string {
	if d.SeenOrder == "" {
		return personImportTables
	}
	return append(slices.Clip(personImportTables), d.SeenOrder)
}

// analyzeTables brings the planner's statistics of tables up to date after a
// bulk write has committed (Dialect.AnalyzeTables), and returns how long that
// took. PostgreSQL plans on what ANALYZE last measured: right after a large
// import into tables it had never analyzed, it read the tags of a page of
// List Persons, and of a lookup, through every holder of each tag, and
// pages were slow until autovacuum caught up (a minute or so with its
// defaults, never with it off). Run outside the import's transaction, the
// ANALYZE of each table commits on its own, and no write waits for it.
func (s *Store) analyzeTables(ctx context.Context, tables []string) (time.Duration, error) {
	if s.dialect.AnalyzeTables == "" {
		return 0, nil
	}
	start := time.Now()
	_, err := s.w.ExecContext(ctx, s.dialect.AnalyzeTables+" "+strings.Join(tables, ", "))
	return time.Since(start), err
}
