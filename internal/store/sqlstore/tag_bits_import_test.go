package sqlstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/testenv"
)

// TestImportKeepsTagBits imports new persons with tags and tags for
// persons already stored, then counts the holders of tags through List
// Persons (whose total comes from the tag bits when most persons were seen
// in the window) against a plain count of the links: before the fold, and
// after it; and the window's total, which comes from the persons timeline.
// The import writes its new persons' timeline deltas itself, a delta per
// chunk, and their tag bits.
func TestImportKeepsTagBits(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rs := openCounting(t, eng)
		rs.StopFolding()
		ctx := context.Background()
		acc := domain.NewID("acc")
		if err := rs.CreateAccount(ctx, domain.Account{ID: acc, Name: "tag bits", CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		var tags []string
		for _, name := range []string{"A", "B", "C"} {
			tag, _, err := rs.CreateTag(ctx, domain.Tag{AccountID: acc, Name: name, Context: "person", DateCreated: domain.T(time.Now())})
			if err != nil {
				t.Fatal(err)
			}
			tags = append(tags, tag.ID)
		}
		// Two imports: the second matches the first's persons by
		// external_id (links made by the trigger) and adds new ones.
		lines := func(from, to int) func(func(store.PersonImport, error) bool) {
			return func(yield func(store.PersonImport, error) bool) {
				for i := from; i < to; i++ {
					var held []string
					for j, every := range []int{2, 3, 5} {
						if (i+from)%every == 0 {
							held = append(held, tags[j])
						}
					}
					p := domain.PersonUpsert{ExternalID: domain.Opt[string]{Set: true, Value: fmt.Sprintf("ext-%d", i)}}
					if !yield(store.PersonImport{Line: i - from + 1, Person: p, TagIDs: held}, nil) {
						return
					}
				}
			}
		}
		for _, span := range [][2]int{{0, 3000}, {1500, 5000}} {
			if _, err := rs.ImportPersons(ctx, acc, lines(span[0], span[1]), store.Write{Now: time.Now(), Window: time.Minute}); err != nil {
				t.Fatal(err)
			}
		}
		// 5,000 persons created in chunks of 512 lines (and the second
		// import's 1,500 matches, each moved in the timeline): a delta per
		// chunk for the persons created, not one per person.
		var deltas int
		if err := rs.db.QueryRow(`SELECT COUNT(*) FROM timeline_deltas WHERE account_id = $1 AND series = 'persons'`, acc).Scan(&deltas); err != nil || deltas > 20+2*1500 {
			t.Fatalf("%d persons timeline deltas for two imports (%v)", deltas, err)
		}
		// Some 6,000 links, of which only those of the 1,500 matched
		// persons (three tags at most) come through the trigger's deltas.
		if err := rs.db.QueryRow(`SELECT COUNT(*) FROM tag_bit_deltas WHERE account_id = $1`, acc).Scan(&deltas); err != nil || deltas > 3*1500 {
			t.Fatalf("%d tag bit deltas for two imports (%v)", deltas, err)
		}
		check := func(stage string) {
			t.Helper()
			_, total, err := rs.ListPersons(ctx, acc, domain.PersonSelection{Mode: domain.PersonWindow,
				Since: time.Now().Add(-time.Hour)}, domain.PageRequest{Page: 1, Size: 10})
			if err != nil || total != 5000 {
				t.Fatalf("%s: a window of %d persons, want 5000 (%v)", stage, total, err)
			}
			for _, held := range [][]string{{tags[0]}, {tags[0], tags[1]}, {tags[1], tags[2]}, {tags[0], tags[1], tags[2]}} {
				_, total, err := rs.ListPersons(ctx, acc, domain.PersonSelection{Mode: domain.PersonWindow,
					Since: time.Now().Add(-time.Hour), TagIDs: held}, domain.PageRequest{Page: 1, Size: 10})
				if err != nil {
					t.Fatal(err)
				}
				where, args := `persons WHERE account_id = ?`, []any{acc}
				for _, tag := range held {
					where += ` AND id IN (SELECT person_id FROM person_tags WHERE tag_id = ?)`
					args = append(args, tag)
				}
				if _, want := rs.ids(t, where, `id`, domain.PageRequest{Page: 1, Size: 1}, args...); total != want {
					t.Fatalf("%s: %d persons hold %v, want %d", stage, total, held, want)
				}
			}
		}
		check("imported")
		if err := rs.FoldTimelines(ctx); err != nil {
			t.Fatal(err)
		}
		check("folded")
		if eng.Name == "sqlite" {
			var markers int
			if err := rs.db.QueryRow(`SELECT COUNT(*) FROM import_writes`).Scan(&markers); err != nil || markers != 0 {
				t.Fatalf("%d import markers left behind (%v)", markers, err)
			}
		}
	})
}

// TestImportPausesTheFold holds the background fold back while an import
// runs (it cannot fold the import's deltas before the commit, and on
// PostgreSQL its walk steps over every uncommitted one) and lets it go
// after, with the import's deltas folded by the import.
func TestImportPausesTheFold(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rs := openCounting(t, eng)
		ctx := context.Background()
		acc := domain.NewID("acc")
		if err := rs.CreateAccount(ctx, domain.Account{ID: acc, Name: "paused fold", CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		var pausedDuring []bool
		lines := func(yield func(store.PersonImport, error) bool) {
			for i := range 1500 {
				if i%500 == 0 {
					pausedDuring = append(pausedDuring, rs.FoldingPaused())
				}
				p := domain.PersonUpsert{ExternalID: domain.Opt[string]{Set: true, Value: fmt.Sprintf("ext-%d", i)}}
				if !yield(store.PersonImport{Line: i + 1, Person: p}, nil) {
					return
				}
			}
		}
		if rs.FoldingPaused() {
			t.Fatal("the fold is paused before any import")
		}
		if _, err := rs.ImportPersons(ctx, acc, lines, store.Write{Now: time.Now(), Window: time.Minute}); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(pausedDuring) != "[true true true]" || rs.FoldingPaused() {
			t.Fatalf("paused during the import: %v, after: %v", pausedDuring, rs.FoldingPaused())
		}
		var unfolded int
		if err := rs.db.QueryRow(`SELECT COUNT(*) FROM timeline_deltas WHERE account_id = $1`, acc).Scan(&unfolded); err != nil || unfolded != 0 {
			t.Fatalf("%d deltas of the import left unfolded (%v)", unfolded, err)
		}
	})
}

// TestImportHoldsTheFolds: an import sets its new links' tag bits itself,
// so from its first bits until its commit no fold of another instance may
// rewrite a chunk (Dialect.SerialFold): one reading a chunk before the
// import's write and writing it back after would undo it.
func TestImportHoldsTheFolds(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		if eng.Name != "postgres" {
			t.Skip("SQLite's one writer runs one transaction at a time")
		}
		rs := openCounting(t, eng)
		// The background fold takes the same lock for a moment every
		// second; a tick landing on a check below would read as the
		// import's hold.
		rs.StopFolding()
		ctx := context.Background()
		acc := domain.NewID("acc")
		if err := rs.CreateAccount(ctx, domain.Account{ID: acc, Name: "held folds", CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		tag, _, err := rs.CreateTag(ctx, domain.Tag{AccountID: acc, Name: "A", Context: "person", DateCreated: domain.T(time.Now())})
		if err != nil {
			t.Fatal(err)
		}
		// Whether a fold could start now: Dialect.SerialFold's lock, tried
		// in a transaction of its own, which lets it go as it ends (a
		// session lock could be taken on one pooled connection and its
		// unlock sent on another, leaving it held).
		foldFree := func() bool {
			t.Helper()
			var free bool
			if err := rs.db.QueryRow(`SELECT pg_try_advisory_xact_lock(hashtextextended('pds tag bits of ' || current_schema(), 0))`).Scan(&free); err != nil {
				t.Fatal(err)
			}
			return free
		}
		var freeDuring []bool
		lines := func(yield func(store.PersonImport, error) bool) {
			for i := range 1200 {
				// Before the first chunk's bits, and after them.
				if i == 100 || i == 1000 {
					freeDuring = append(freeDuring, foldFree())
				}
				p := domain.PersonUpsert{ExternalID: domain.Opt[string]{Set: true, Value: fmt.Sprintf("ext-%d", i)}}
				if !yield(store.PersonImport{Line: i + 1, Person: p, TagIDs: []string{tag.ID}}, nil) {
					return
				}
			}
		}
		if _, err := rs.ImportPersons(ctx, acc, lines, store.Write{Now: time.Now(), Window: time.Minute}); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(freeDuring) != "[true false]" || !foldFree() {
			t.Fatalf("folds free during the import: %v, after: %v", freeDuring, foldFree())
		}
		_, total, err := rs.ListPersons(ctx, acc, domain.PersonSelection{Mode: domain.PersonWindow,
			Since: time.Now().Add(-time.Hour), TagIDs: []string{tag.ID}}, domain.PageRequest{Page: 1, Size: 10})
		if err != nil || total != 1200 {
			t.Fatalf("%d persons hold the tag, want 1200 (%v)", total, err)
		}
	})
}
