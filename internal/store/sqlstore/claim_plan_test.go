package sqlstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/testenv"
)

// TestClaimLeasesByID: a claim's lease is written through the primary key,
// one look-up a claimed delivery. Written as the UPDATE of its picking
// select's IN subquery, both planners drove it from the due index instead
// and matched every due delivery against the pick, so that each claim of a
// backlog read the whole backlog.
func TestClaimLeasesByID(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rs := openCounting(t, eng)
		rs.StopFolding()
		ctx := context.Background()
		acc, _ := rs.seedAccount(t, 100)
		for range 4 {
			rs.seedDeliveries(t, acc, 3000) // 60 pending deliveries each
		}
		if eng.Name == "postgres" {
			rs.analyze(t)
		}
		var claimed int
		queries := rs.recordQueries(func() {
			jobs, err := rs.ClaimDeliveriesFairly(ctx, seedEpoch.Add(24*time.Hour), time.Minute, store.DeliveryClaim{Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			claimed = len(jobs)
		})
		if claimed != 10 {
			t.Fatalf("claimed %d, want 10", claimed)
		}
		key := map[string]string{"sqlite": "sqlite_autoindex_deliveries_1 (id=?)", "postgres": "deliveries_pkey"}[eng.Name]
		updates := 0
		for _, q := range queries {
			if !strings.HasPrefix(q.query, "UPDATE deliveries SET lease_until") {
				continue
			}
			updates++
			plan := strings.Join(explainPriced(t, rs, q.query, q.args), "\n")
			if !strings.Contains(plan, key) || strings.Contains(plan, "deliveries_due") {
				t.Errorf("the lease's UPDATE does not find its rows by id:\n%s\nplan:\n%s", q.query, plan)
			}
		}
		if updates != 1 {
			t.Fatalf("%d lease updates recorded, want 1", updates)
		}
	})
}
