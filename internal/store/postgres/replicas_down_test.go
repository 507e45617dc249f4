package postgres_test

import (
	"context"
	"testing"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/store/postgres"
	"github.com/pds-dev/pds/internal/store/storetest"
	"github.com/pds-dev/pds/internal/testenv"
)

// TestReplicasDownCostNothing opens a store whose every replica is down
// (nothing listens at their ports): it opens, pings (what /readyz asks) and
// serves every read from the primary, without an error.
func TestReplicasDownCostNothing(t *testing.T) {
	ctx := context.Background()
	url := testenv.Postgres.NewDatabase(t)
	st, err := postgres.Open(ctx, url, postgres.Options{Replicas: []string{
		"postgres://postgres@127.0.0.1:1/test?sslmode=disable", "postgres://postgres@127.0.0.1:2/test?sslmode=disable"}})
	if err != nil {
		t.Fatalf("open with replicas down: %v", err)
	}
	defer st.Close()
	if err := st.Ping(ctx); err != nil {
		t.Fatalf("ping with replicas down: %v", err)
	}
	acc := storetest.NewAccount(t, st)
	p, _, err := st.UpsertPerson(ctx, acc, domain.PersonUpsert{ExternalID: text("p"), FirstName: text("x")}, store.Write{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		read := store.MayReadReplica(ctx)
		got, err := st.GetPerson(read, acc, p.ID)
		if err != nil || got.FirstName == nil || *got.FirstName != "x" {
			t.Fatalf("read %d with replicas down: %+v, %v", i, got, err)
		}
		if _, _, err := st.ListPersons(read, acc, domain.PersonSelection{Mode: domain.PersonWindow}, domain.PageRequest{Page: 1, Size: 10}); err != nil {
			t.Fatalf("list %d with replicas down: %v", i, err)
		}
	}
	got := statsOf(st)
	t.Logf("replicas down: %s", got)
	if got.replica != 0 || got.primary == 0 {
		t.Fatalf("reads with every replica down: %s", got)
	}
}
