package main

import (
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/testenv"
)

// faultHold is how long a stopped or frozen database stays so.
const faultHold = 10 * time.Second

// TestPostgresFaults: two instances on a PostgreSQL cluster of the test's
// own, under eight writers, while the cluster is stopped for faultHold,
// restarted as after a crash (stopped in immediate mode, so the start runs
// crash recovery) and frozen for faultHold (every process SIGSTOPped).
func TestPostgresFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("the fault tests take a minute; skipped with -short")
	}
	t.Parallel()
	cluster := testenv.NewCluster(t)
	bin := buildPDS(t)
	began := time.Now()
	rig := newFaultRig(t, bin, cluster.URL, 2)
	rig.startWriters()
	time.Sleep(2 * time.Second)
	rig.stopWriters()
	goroutines, fds := rig.quiet()
	rig.startWriters()
	time.Sleep(time.Second)

	rig.fault("stopped", func() { cluster.Stop("fast") }, cluster.Start, faultHold,
		"database_unreachable", "database_timeout")
	time.Sleep(time.Second)
	rig.fault("restarted after a crash", func() { cluster.Stop("immediate") }, cluster.Start, time.Second,
		"database_unreachable", "database_timeout")
	time.Sleep(time.Second)
	rig.fault("frozen", cluster.Freeze, cluster.Thaw, faultHold,
		"database_timeout", "database_unreachable")
	time.Sleep(2 * time.Second)

	rig.finish(began)
	rig.checkOutagesLogged(3)
	rig.checkNothingLeft(goroutines, fds)
}
