package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/store/sqlite"
	"github.com/pds-dev/pds/internal/testenv"
)

// TestBackupUnderWrites: a backup taken while writers keep upserting opens,
// passes SQLite's integrity check and holds every person whose upsert was
// acknowledged before the backup began.
func TestBackupUnderWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	path, dest := filepath.Join(dir, "pds.db"), filepath.Join(dir, "copy.db")
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	acc := domain.Account{ID: domain.NewID("acc"), Name: "backup", CreatedAt: time.Now()}
	if err := st.CreateAccount(ctx, acc); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var acked []string // person ids, in the order their upserts returned
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ext := fmt.Sprintf("w%d-%d", w, i)
				p, _, err := st.UpsertPerson(ctx, acc.ID, domain.PersonUpsert{
					ExternalID: domain.Opt[string]{Set: true, Value: ext},
					FirstName:  domain.Opt[string]{Set: true, Value: "Ada"},
				}, store.Write{Now: time.Now(), Window: time.Minute})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				acked = append(acked, p.ID)
				mu.Unlock()
			}
		}()
	}
	waitFor := func(n int) {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
			mu.Lock()
			got := len(acked)
			mu.Unlock()
			if got >= n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("only %d upserts acknowledged", got)
			}
		}
	}
	waitFor(200)
	mu.Lock()
	before := append([]string(nil), acked...)
	mu.Unlock()
	var out testenv.Buffer
	err = run(ctx, []string{"backup", "--database", path, "--json", dest}, strings.NewReader(""), &out, &testenv.Buffer{})
	waitFor(len(before) + 100) // the writers went on during the backup
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		File      string `json:"file"`
		Bytes     int64  `json:"bytes"`
		Integrity string `json:"integrity"`
	}
	if err := json.Unmarshal([]byte(out.String()), &res); err != nil || res.File != dest || res.Bytes == 0 || res.Integrity != "ok" {
		t.Fatalf("backup printed %q (%v)", out.String(), err)
	}

	copied, err := sqlite.Open(ctx, dest)
	if err != nil {
		t.Fatal(err)
	}
	defer copied.Close()
	for _, id := range before {
		if _, err := copied.GetPerson(ctx, acc.ID, id); err != nil {
			t.Fatalf("person %s, acknowledged before the backup began: %v", id, err)
		}
	}
	t.Logf("%d persons acknowledged before the backup, all in it", len(before))

	// A second backup to the same file is refused, and leaves it whole.
	err = run(ctx, []string{"backup", "--database", path, dest}, strings.NewReader(""), &testenv.Buffer{}, &testenv.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("backup over an existing file: %v", err)
	}
}

func TestBackupRefusesPostgres(t *testing.T) {
	t.Parallel()
	err := run(context.Background(), []string{"backup", "--database", "postgres://u@h/db", "x.db"}, strings.NewReader(""), &testenv.Buffer{}, &testenv.Buffer{})
	if err == nil || exitStatus(err) != 2 || !strings.Contains(err.Error(), "pg_dump") {
		t.Fatalf("backup of PostgreSQL: %v (exit %d), want exit 2 pointing to pg_dump", err, exitStatus(err))
	}
}
