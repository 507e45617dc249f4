package pgcluster_test

import (
	"testing"

	"github.com/pds-dev/pds/internal/pgcluster"
	"github.com/pds-dev/pds/internal/testenv"
)

// TestFailoverAndRejoin: the cluster fails over as a failover manager
// would: the primary killed, the standby promoted, the old primary rewound
// and streaming again as the synchronous standby, twice.
func TestFailoverAndRejoin(t *testing.T) {
	c := testenv.NewPGCluster(t, pgcluster.Options{Synchronous: true})
	if err := c.Primary().Exec(`CREATE TABLE t (x int)`, `INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		old := c.Primary()
		next := c.Other(old)
		if err := old.Kill(); err != nil {
			t.Fatal(err)
		}
		if err := c.Promote(next); err != nil {
			t.Fatal(err)
		}
		if err := next.Exec(`INSERT INTO t VALUES (2)`); err != nil {
			t.Fatalf("round %d: a write on the promoted node: %v", round, err)
		}
		if err := c.Rejoin(old); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if err := next.Exec(`INSERT INTO t VALUES (3)`); err != nil {
			t.Fatalf("round %d: a write with the old primary re-joined: %v", round, err)
		}
	}
}
