package sqlite_test

import (
	"strings"
	"testing"

	"github.com/pds-dev/pds/internal/store/sqlite"
	"github.com/pds-dev/pds/internal/testenv"
)

// TestReorderLooksUpEachListedPerson: the statements that put a batch's
// or an import's persons at the end of the feed walk the list and find
// each entry by its key. An UPDATE ... FROM the list scanned the account's
// whole feed instead, once per chunk, with the list inside: a modest import
// took far too long, and a large one would not have ended.
func TestReorderLooksUpEachListedPerson(t *testing.T) {
	t.Parallel()
	path := testenv.SQLite.NewDatabase(t)
	testenv.SQLite.Open(t, path) // migrates
	db := testenv.SQLite.Raw(t, path)
	for _, stmt := range sqlite.Dialect.Changes.Reorder {
		rows, err := db.Query("EXPLAIN QUERY PLAN "+stmt, "acc_1", `["per_1","per_2"]`)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		for _, step := range plan {
			if strings.Contains(step, "person_changes") && (strings.HasPrefix(step, "SCAN") || !strings.Contains(step, "person_id=?")) {
				t.Errorf("%s\nwalks the feed: %q", stmt, plan)
			}
		}
	}
}
