package postgres_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/store/storetest"
	"github.com/pds-dev/pds/internal/testenv"
)

// TestChangeFeedWaitsForALateCommit: a transaction that changed a person
// before another one did, and commits after it, is not passed over by a
// follower that read the other's change in between, as a feed numbered
// in the order its writes began would pass it (the naive design: the
// position is the entry's sequence number, and the follower reads after
// it). Nor does the transaction still running hold the other's change
// back: it is read at once.
func TestChangeFeedWaitsForALateCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	testenv.ForEachPostgres(t, func(t *testing.T, eng testenv.Engine) {
		url := eng.NewDatabase(t)
		st := eng.Open(t, url)
		acc := storetest.NewAccount(t, st)
		w := store.Write{Now: storetest.Epoch, Window: time.Minute}
		slow, _, err := st.UpsertPerson(ctx, acc, domain.PersonUpsert{ExternalID: domain.Opt[string]{Set: true, Value: "slow"}}, w)
		if err != nil {
			t.Fatal(err)
		}
		head, err := st.ChangesHead(ctx, acc)
		if err != nil {
			t.Fatal(err)
		}

		// The slow writer changes its person first, and holds on.
		raw := eng.Raw(t, url)
		tx, err := raw.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback() //nolint:errcheck // committed below
		if _, err := tx.ExecContext(ctx, `UPDATE persons SET first_name = 'slow' WHERE id = $1`, slow.ID); err != nil {
			t.Fatal(err)
		}
		var slowSeq int64
		if err := tx.QueryRowContext(ctx, `SELECT seq FROM person_changes WHERE person_id = $1`, slow.ID).Scan(&slowSeq); err != nil {
			t.Fatal(err)
		}
		fast, _, err := st.UpsertPerson(ctx, acc, domain.PersonUpsert{ExternalID: domain.Opt[string]{Set: true, Value: "fast"}}, w)
		if err != nil {
			t.Fatal(err)
		}
		page, next, err := st.PersonChanges(ctx, acc, head, 100)
		if err != nil {
			t.Fatal(err)
		}
		if got := personIDs(page); !slices.Equal(got, []string{fast.ID}) {
			t.Fatalf("while the slow writer runs: %v, want the fast one's change at once", got)
		}
		var fastSeq int64
		if err := raw.QueryRowContext(ctx, `SELECT seq FROM person_changes WHERE person_id = $1`, fast.ID).Scan(&fastSeq); err != nil {
			t.Fatal(err)
		}
		if slowSeq >= fastSeq {
			t.Fatalf("the slow writer's entry took %d, the fast one's %d: the case needs the slow one numbered first", slowSeq, fastSeq)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		// A follower after the fast entry's number would pass the slow
		// one by: it was numbered before.
		var naive int
		if err := raw.QueryRowContext(ctx, `SELECT count(*) FROM person_changes WHERE account_id = $1 AND seq > $2`, acc, fastSeq).Scan(&naive); err != nil {
			t.Fatal(err)
		}
		if naive != 0 {
			t.Fatalf("%d entries numbered after the fast one: the naive design would have seen the slow one", naive)
		}
		page, _, err = st.PersonChanges(ctx, acc, next, 100)
		if err != nil {
			t.Fatal(err)
		}
		if got := personIDs(page); !slices.Equal(got, []string{slow.ID}) {
			t.Fatalf("after the slow writer committed: %v, want its change", got)
		}
		if p := page[0].Person; p.FirstName == nil || *p.FirstName != "slow" {
			t.Fatalf("the slow one's entry holds %+v", p)
		}
	})
}

func personIDs(page []domain.PersonChange) []string {
	ids := make([]string, len(page))
	for i, e := range page {
		ids[i] = e.PersonID
	}
	return ids
}
