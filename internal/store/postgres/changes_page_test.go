package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/store/postgres"
	"github.com/pds-dev/pds/internal/store/storetest"
	"github.com/pds-dev/pds/internal/testenv"
)

// TestChangeFeedOrdersByTransactionNumber: a page that holds entries of
// transactions 999 and 1000 gives 999's first, as their numbers say (not
// their text: "1000" < "999"), so a follower reading pages of three meets
// every person once, in the feed's order.
func TestChangeFeedOrdersByTransactionNumber(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	testenv.ForEachPostgres(t, func(t *testing.T, eng testenv.Engine) {
		url := eng.NewDatabase(t)
		st := eng.Open(t, url)
		acc := storetest.NewAccount(t, st)
		w := store.Write{Now: storetest.Epoch, Window: time.Minute}
		var want []string
		for i := range 4 {
			p, _, err := st.UpsertPerson(ctx, acc, domain.PersonUpsert{ExternalID: domain.Opt[string]{Set: true, Value: fmt.Sprint("p", i)}}, w)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, p.ID)
		}
		// Transactions long committed, below any snapshot's xmin: two
		// entries each, numbered across a digit.
		raw := eng.Raw(t, url)
		for i, id := range want {
			if _, err := raw.ExecContext(ctx, `UPDATE person_changes SET xid = $2::text::xid8, seq = $3 WHERE person_id = $1`,
				id, fmt.Sprint(999+i/2), i%2+1); err != nil {
				t.Fatal(err)
			}
		}
		var got []string
		var after domain.ChangePosition
		for range 10 {
			page, next, err := st.PersonChanges(ctx, acc, after, 3)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, personIDs(page)...)
			if len(page) < 3 {
				break
			}
			after = next
		}
		if !slices.Equal(got, want) {
			t.Fatalf("following the feed in pages of three: %v, want %v", got, want)
		}
	})
}

// TestChangeFeedPageReadsItsRange: a page of the feed reads the pages
// holding its entries and a few more, however long the feed and wherever
// its cursor: the running transactions a cursor lists are each looked up in
// the index, never filtered out of a walk over the rest of the feed, and a
// batch that starts past the cursor's position is entered at its start.
func TestChangeFeedPageReadsItsRange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	testenv.ForEachPostgres(t, func(t *testing.T, eng testenv.Engine) {
		url := eng.NewDatabase(t)
		st := eng.Open(t, url)
		acc := storetest.NewAccount(t, st)
		raw := eng.Raw(t, url)
		const entries = 50000
		if _, err := raw.ExecContext(ctx, `INSERT INTO person_changes (account_id, person_id, xid, seq, changed_at)
			SELECT $1, 'per_' || i, (1000 + i / 1000)::text::xid8, i, 0 FROM generate_series(1, $2) i`, acc, entries); err != nil {
			t.Fatal(err)
		}
		if _, err := raw.ExecContext(ctx, `ANALYZE person_changes`); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name, base string
			xid        uint64
		}{
			{"from the beginning", "", 0},
			{"a cursor listing running transactions", "1010:1030:1010,1020,1029", 1010},
			{"a cursor at the head, past its position", "1040:1045:", 1010},
		} {
			var cut string
			if err := raw.QueryRowContext(ctx, `SELECT pg_current_snapshot()::text`).Scan(&cut); err != nil {
				t.Fatal(err)
			}
			var plan []byte
			if err := raw.QueryRowContext(ctx, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+postgres.Dialect.Changes.Page,
				acc, c.base, cut, fmt.Sprint(c.xid), 0, 101).Scan(&plan); err != nil {
				t.Fatal(err)
			}
			// The feed's index spans some 400 pages; a page of 101
			// entries sits on a few of them and a few of the table's.
			if pages := pagesRead(t, plan); pages > 40 {
				t.Errorf("%s: the page read %d pages of a feed of %d entries, want a few", c.name, pages, entries)
			}
		}
	})
}

// pagesRead is the pages of shared buffers a plan's statement touched.
func pagesRead(t *testing.T, plan []byte) int {
	var root []struct {
		Plan struct {
			Hit  int `json:"Shared Hit Blocks"`
			Read int `json:"Shared Read Blocks"`
		}
	}
	if err := json.Unmarshal(plan, &root); err != nil || len(root) != 1 {
		t.Fatalf("plan %s: %v", plan, err)
	}
	return root[0].Plan.Hit + root[0].Plan.Read
}
