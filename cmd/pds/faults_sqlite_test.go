package main

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/testenv"
)

// TestSQLiteDiskFull: pds serve on an SQLite database on a small tmpfs,
// under eight writers, while a ballast file fills the disk for a few
// seconds and is then deleted. Writes are refused plainly as a full disk,
// reads keep working, writes work again once there is room, and the
// database stays whole.
func TestSQLiteDiskFull(t *testing.T) {
	if testing.Short() {
		t.Skip("the fault tests take a while; skipped with -short")
	}
	t.Parallel()
	disk := testenv.NewSmallDisk(t, 256<<20)
	database := filepath.Join(disk.Dir, "pds.db")
	bin := buildPDS(t)
	began := time.Now()
	rig := newFaultRig(t, bin, database, 1)
	rig.startWriters()
	time.Sleep(2 * time.Second)
	rig.stopWriters()
	goroutines, fds := rig.quiet()

	// A person to read while the disk is full.
	c := rig.clients[0]
	var person struct{ ID string }
	c.must(t, "POST", "/persons", map[string]any{"external_id": "reader-1", "first_name": "Ada"}, 201, &person)
	rig.startWriters()
	time.Sleep(time.Second)

	stopReads := make(chan struct{})
	var reads sync.WaitGroup
	var readErrs []string
	readsDone := 0
	reads.Go(func() {
		for {
			select {
			case <-stopReads:
				return
			case <-time.After(50 * time.Millisecond):
			}
			status, raw, err := c.do("GET", "/persons/"+person.ID, nil, nil)
			readsDone++
			if err != nil || status != 200 {
				readErrs = append(readErrs, fmt.Sprintf("%d %s %v", status, raw, err))
			}
		}
	})
	rig.fault("disk full", disk.Fill, disk.Free, 5*time.Second, "disk_full")
	close(stopReads)
	reads.Wait()
	if len(readErrs) > 0 {
		t.Errorf("%d of %d reads failed while the disk was full; the first: %s", len(readErrs), readsDone, readErrs[0])
	}
	time.Sleep(time.Second)

	rig.finish(began)
	rig.checkOutagesLogged(1)
	rig.checkNothingLeft(goroutines, fds)

	db, err := sql.Open("sqlite", "file:"+database+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var integrity string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&integrity); err != nil || integrity != "ok" {
		t.Errorf("integrity check: %q, %v", integrity, err)
	}
}
