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

// TestChangeFeedPageReadsItsRange: a page of the feed reads the index
// entries it returns and a few more, however long the feed: the running
// transactions a cursor lists are each looked up in the index, never
// filtered out of a walk over the rest of the feed.
func TestChangeFeedPageReadsItsRange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	testenv.ForEachPostgres(t, func(t *testing.T, eng testenv.Engine) {
		url := eng.NewDatabase(t)
		st := eng.Open(t, url)
		acc := storetest.NewAccount(t, st)
		raw := eng.Raw(t, url)
		const entries = 5000
		if _, err := raw.ExecContext(ctx, `INSERT INTO person_changes (account_id, person_id, xid, seq, changed_at)
			SELECT $1, 'per_' || i, (1000 + i / 100)::text::xid8, i, 0 FROM generate_series(1, $2) i`, acc, entries); err != nil {
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
		} {
			var cut string
			if err := raw.QueryRowContext(ctx, `SELECT pg_current_snapshot()::text`).Scan(&cut); err != nil {
				t.Fatal(err)
			}
			var plan []byte
			if err := raw.QueryRowContext(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+postgres.Dialect.Changes.Page,
				acc, c.base, cut, fmt.Sprint(c.xid), 0, 101).Scan(&plan); err != nil {
				t.Fatal(err)
			}
			if read := rowsRead(t, plan); read > 4*101 {
				t.Errorf("%s: the page read %d rows of a feed of %d, want about the page's 101", c.name, read, entries)
			}
		}
	})
}

// rowsRead sums what the plan's scans of person_changes returned and
// filtered out.
func rowsRead(t *testing.T, plan []byte) int {
	var root []struct{ Plan json.RawMessage }
	if err := json.Unmarshal(plan, &root); err != nil || len(root) != 1 {
		t.Fatalf("plan %s: %v", plan, err)
	}
	type node struct {
		Relation string  `json:"Relation Name"`
		Rows     float64 `json:"Actual Rows"`
		Loops    float64 `json:"Actual Loops"`
		Removed  float64 `json:"Rows Removed by Filter"`
		Plans    []json.RawMessage
	}
	var walk func(raw json.RawMessage) int
	walk = func(raw json.RawMessage) int {
		var n node
		if err := json.Unmarshal(raw, &n); err != nil {
			t.Fatal(err)
		}
		sum := 0
		if n.Relation == "person_changes" {
			sum += int((n.Rows + n.Removed) * max(n.Loops, 1))
		}
		for _, p := range n.Plans {
			sum += walk(p)
		}
		return sum
	}
	return walk(root[0].Plan)
}
