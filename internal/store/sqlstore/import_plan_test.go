package sqlstore_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/testenv"
)

// TestPlansRightAfterImport imports persons, a third holding tag A and a
// fifth tag B, and with no ANALYZE of its own checks the plans of the
// window list and the lookups on the statistics the import left: they must
// be the plans TestHotQueryPlans expects, explained as it explains them
// (sequential scans priced out: the import leaves a few timeline buckets
// and no custom field values, tables rightly read whole at that size).
//
// On PostgreSQL, 200,000 persons go into tables it has never analyzed, with
// autovacuum off for them whatever the server says, so that only the
// import can have analyzed them. Before imports analyzed what they wrote,
// the tags of a page and of a lookup were read through every holder of
// each tag. On SQLite, whose plans come from migration 00010's statistics
// alone, the import must leave those as they were.
func TestPlansRightAfterImport(t *testing.T) {
	if testing.Short() {
		t.Skip("imports 200,000 persons")
	}
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rs := openCounting(t, eng)
		// The fold runs when the test says (after the import, as the
		// background fold would), so that its statements are not taken
		// for the reads'.
		rs.StopFolding()
		n := 200_000
		var shape []string
		if eng.Name == "postgres" {
			rs.exec(t, `DO $$ DECLARE t text; BEGIN
				FOR t IN SELECT quote_ident(tablename) FROM pg_tables WHERE schemaname = current_schema() LOOP
					EXECUTE 'ALTER TABLE ' || t || ' SET (autovacuum_enabled = off)';
				END LOOP; END $$`)
		} else {
			n = 20_000 // its plans do not depend on the rows
			shape = plannerStatistics(t, rs)
		}
		ctx := context.Background()
		now := time.Now().UTC()
		acc, tags := importAccount(t, rs, now)
		res, err := rs.ImportPersons(ctx, acc, benchLines(n, tags[0], tags[1]), store.Write{Now: now, Window: time.Minute})
		if err != nil || res.Created != n || res.AnalyzeErr != nil {
			t.Fatalf("import: %+v, %v", res, err)
		}
		if err := rs.FoldTimelines(ctx); err != nil {
			t.Fatal(err)
		}
		if shape != nil {
			if got := plannerStatistics(t, rs); !slices.Equal(got, shape) {
				t.Errorf("the import changed sqlite_stat1 from\n%v\nto\n%v", shape, got)
			}
		}

		window := domain.PersonSelection{Mode: domain.PersonWindow, Since: now.Add(-time.Hour)}
		tagged := window
		tagged.TagIDs = tags
		for _, tc := range []struct {
			name string
			read func() error
		}{
			{"window, page 1", listPersons(ctx, rs, acc, window, 1)},
			{"window, deep page", listPersons(ctx, rs, acc, window, n/25/3)},
			{"window with two tags", listPersons(ctx, rs, acc, tagged, 1)},
			{"lookup by email", listPersons(ctx, rs, acc, domain.PersonSelection{Mode: domain.PersonByEmail, Key: "p12345@example.com"}, 1)},
			{"lookup by external_id", listPersons(ctx, rs, acc, domain.PersonSelection{Mode: domain.PersonByExternalID, Key: "ext-12345"}, 1)},
		} {
			checkPlans(t, rs, tc.name, tc.read)
		}
	})
}

// TestImportsAnalyzeWhatTheyWrote runs every kind of import on PostgreSQL
// into a schema whose statistics were fresh before, then holds each table's
// row count as the planner knows it (pg_class.reltuples, which ANALYZE sets
// exactly for a table this small) to its real count: a table an import
// writes and does not analyze keeps its old count.
func TestImportsAnalyzeWhatTheyWrote(t *testing.T) {
	t.Parallel()
	rs := openCounting(t, testenv.Postgres)
	rs.StopFolding() // only the imports change the tables
	ctx := context.Background()
	now := time.Now().UTC()
	acc, tags := importAccount(t, rs, now)
	field := domain.CustomField{ID: "cf_score", Collection: "Person", DataType: "int", Key: "score", FormType: "text", DateCreated: domain.T(now)}
	if err := rs.ImportCustomFields(ctx, acc, []domain.CustomField{field}); err != nil {
		t.Fatal(err)
	}
	rs.analyze(t)

	// Lines from to to of benchLines, each with a score of the round.
	lines := func(from, to, round int) iter.Seq2[store.PersonImport, error] {
		return func(yield func(store.PersonImport, error) bool) {
			for rec, err := range benchLines(to, tags[0], tags[1]) {
				score := json.RawMessage(fmt.Sprint(round))
				rec.Person.CustomFields = domain.Opt[map[string]json.RawMessage]{Set: true, Value: map[string]json.RawMessage{"score": score}}
				if rec.Line > from && !yield(rec, err) {
					return
				}
			}
		}
	}
	w := store.Write{Now: now, Window: time.Minute}
	// New persons; then a hundred matched and changed, and a hundred new.
	for round, span := range [][2]int{{0, 300}, {200, 400}} {
		if res, err := rs.ImportPersons(ctx, acc, lines(span[0], span[1], round), w); err != nil || res.AnalyzeErr != nil {
			t.Fatalf("import of lines %v: %+v, %v", span, res, err)
		}
	}
	if err := rs.ImportProjects(ctx, acc, []domain.Project{{ID: "prj_1", Name: "Summit"}, {Name: "Fair"}}); err != nil {
		t.Fatal(err)
	}
	if err := rs.ImportCampaigns(ctx, acc, []domain.Campaign{{Name: "Spring", ProjectID: new("prj_1")}, {Name: "Fall"}}); err != nil {
		t.Fatal(err)
	}
	if err := rs.ImportCustomFields(ctx, acc, []domain.CustomField{{Collection: "Person", DataType: "str", Key: "team", FormType: "text"}}); err != nil {
		t.Fatal(err)
	}

	rows, err := rs.db.Query(`SELECT c.relname, c.reltuples FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = current_schema() AND c.relkind = 'r' ORDER BY c.relname`)
	if err != nil {
		t.Fatal(err)
	}
	planned := map[string]float64{}
	for rows.Next() {
		var table string
		var tuples float64
		if err := rows.Scan(&table, &tuples); err != nil {
			t.Fatal(err)
		}
		planned[table] = tuples
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	for table, tuples := range planned {
		var n float64
		if err := rs.db.QueryRow(fmt.Sprintf(`SELECT COUNT(*) FROM %q`, table)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if tuples != n {
			t.Errorf("%s: the planner counts %v rows, the table holds %v", table, tuples, n)
		}
	}
}

// importAccount makes an account with tags A and B, as pdsbench's seed does.
func importAccount(t *testing.T, rs rawStore, now time.Time) (string, []string) {
	t.Helper()
	ctx := context.Background()
	acc := domain.NewID("acc")
	if err := rs.CreateAccount(ctx, domain.Account{ID: acc, Name: "import", CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	var tags []string
	for _, name := range []string{"A", "B"} {
		tag, _, err := rs.CreateTag(ctx, domain.Tag{AccountID: acc, Name: name, Context: "person", DateCreated: domain.T(now)})
		if err != nil {
			t.Fatal(err)
		}
		tags = append(tags, tag.ID)
	}
	return acc, tags
}

// plannerStatistics reads SQLite's sqlite_stat1, one row per line.
func plannerStatistics(t *testing.T, rs rawStore) []string {
	t.Helper()
	rows, err := rs.db.Query(`SELECT tbl, COALESCE(idx, ''), stat FROM sqlite_stat1 ORDER BY tbl, idx`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var tbl, idx string
		var stat sql.NullString
		if err := rows.Scan(&tbl, &idx, &stat); err != nil {
			t.Fatal(err)
		}
		out = append(out, tbl+" "+idx+" "+stat.String)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
