package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

// TestWALIndexCutShortIsRebuilt: when something other than SQLite
// truncates the WAL index under a serving store (no SQLite of this binary
// does since walIndex keeps its locks), the reads and writes that meet it
// are refused as a fault of the disk (503 disk_error), never a defect,
// /readyz's Ping says so, and the store closes its connections and opens
// new ones by itself, without a restart (connections.reset): writes
// succeed again, every acknowledged one is kept, and the file is sound.
func TestWALIndexCutShortIsRebuilt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	path := filepath.Join(t.TempDir(), "pds.db")
	var logged lockedBuffer
	st, err := OpenWith(ctx, path, Options{Log: slog.New(slog.NewJSONHandler(&logged, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	acc := domain.Account{ID: domain.NewID("acc"), Name: "busy", CreatedAt: time.Now().UTC()}
	if err := st.CreateAccount(ctx, acc); err != nil {
		t.Fatal(err)
	}
	var acknowledged sync.Map
	for i := range 50 {
		if err := writeAndRead(ctx, st, acc.ID, fmt.Sprintf("before-%d", i), &acknowledged); err != nil {
			t.Fatal(err)
		}
	}

	// Nothing else runs: the first read after the cut meets it.
	cut := func() {
		t.Helper()
		// By name: a descriptor of the file closed here would drop this
		// process's locks on it.
		if err := syscall.Truncate(path+"-shm", 0); err != nil {
			t.Fatal(err)
		}
	}
	cut()
	err = st.Ping(ctx)
	var ue *domain.UnavailableError
	if !errors.As(st.Classify(err), &ue) || ue.Cause != domain.CauseDiskError {
		t.Fatalf("Ping after the WAL index was cut short: %v, want a disk_error fault", err)
	}
	if err := st.Ping(ctx); err != nil {
		t.Fatalf("Ping once the fault was classified (and the index mended): %v", err)
	}

	// Under writers, again: every failure is the fault, and writing goes
	// on by itself.
	var ok, faults atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var stopOnce sync.Once
	halt := func() { stopOnce.Do(func() { close(stop) }); wg.Wait() }
	defer halt()
	for w := range 8 {
		wg.Go(func() {
			gen := 0
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ext := fmt.Sprintf("w%d-%d-%d", w, gen, i%32)
				err := writeAndRead(ctx, st, acc.ID, ext, &acknowledged)
				var ue *domain.UnavailableError
				switch {
				case err == nil:
					ok.Add(1)
				case errors.As(st.Classify(err), &ue) && ue.Cause == domain.CauseDiskError:
					// A refused write's outcome is unknown (it may have
					// committed before the fault met it): the person is
					// no longer checked, and the writer moves on to others.
					faults.Add(1)
					acknowledged.Delete(ext)
					gen++
				default:
					t.Errorf("writer %d: %v, want success or a disk_error fault", w, err)
					return
				}
			}
		})
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			select {
			case <-ctx.Done():
				t.Fatalf("waiting for %s: %d writes, %d faults", what, ok.Load(), faults.Load())
			case <-time.After(time.Millisecond):
			}
		}
	}
	waitFor("writes", func() bool { return ok.Load() > 200 })
	cut()
	waitFor("the writes to meet the cut", func() bool { return faults.Load() > 0 })
	after := ok.Load()
	waitFor("writes after the cut", func() bool { return ok.Load() > after+200 })
	halt()
	t.Logf("%d writes, %d refused for the fault", ok.Load(), faults.Load())

	checkAcknowledged(ctx, t, st, acc.ID, &acknowledged)
	raw, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var integrity string
	if err := raw.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&integrity); err != nil || integrity != "ok" {
		t.Fatalf("integrity_check: %q, %v", integrity, err)
	}
	if !strings.Contains(logged.String(), "WAL index was cut short by another process") {
		t.Fatalf("the log says nothing of the mend:\n%s", logged.String())
	}
}

// lockedBuffer collects a store's log while a test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
