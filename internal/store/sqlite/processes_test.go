package sqlite

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/store"
)

// cliDatabaseEnv names the database TestMain's child process opens, as
// pds accounts create and pds keys create open it, instead of running the
// tests.
const cliDatabaseEnv = "PDS_TEST_SQLITE_CLI_DATABASE"

func TestMain(m *testing.M) {
	if path := os.Getenv(cliDatabaseEnv); path != "" {
		if err := createAccountAndKey(path); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// createAccountAndKey is what an operator's pds accounts create and pds
// keys create do to the database at path, in one process.
func createAccountAndKey(path string) error {
	ctx := context.Background()
	if inUse, err := walIndexInUse(path); err != nil {
		return err
	} else if !inUse {
		return fmt.Errorf("no other process holds the WAL index of %s: opening the database starts it over", path)
	}
	st, err := Open(ctx, path)
	if err != nil {
		return err
	}
	defer st.Close()
	acc := domain.Account{ID: domain.NewID("acc"), Name: "second", CreatedAt: time.Now().UTC()}
	if err := st.CreateAccount(ctx, acc); err != nil {
		return err
	}
	_, _, err = service.MintKey(ctx, st, service.KeyRequest{AccountID: acc.ID, Scopes: domain.AllScopes}, time.Now().UTC())
	return err
}

// runCLI opens the database at path in a process of its own and creates an
// account and a key there.
func runCLI(t *testing.T, path string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), cliDatabaseEnv+"="+path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the second process: %v\n%s", err, out)
	}
}

// TestAnotherProcessOpensTheFileWhileWritesGoOn: while a server's writers
// keep the WAL large, other processes (the administrative commands) open
// the same file, create accounts and keys, and exit; every write of the
// server, before, during and after, is answered and kept.
//
// SQLite keeps the WAL index (-shm) of a file as it is only while some
// process holds a read lock on its DMS byte; a process that finds none
// takes the file for unused and starts the index over, under the mappings
// of every process still using it. POSIX drops all of a process's locks on
// a file when it closes any descriptor of that file, so a descriptor of
// the -shm opened and closed beside SQLite's took the server's lock away.
func TestAnotherProcessOpensTheFileWhileWritesGoOn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	path := filepath.Join(t.TempDir(), "pds.db")
	st, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	acc := domain.Account{ID: domain.NewID("acc"), Name: "busy", CreatedAt: time.Now().UTC()}
	if err := st.CreateAccount(ctx, acc); err != nil {
		t.Fatal(err)
	}

	var acknowledged sync.Map // external id -> email
	var written, failed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var stopOnce sync.Once
	// Stopped before the store closes, however the test ends.
	defer func() {
		stopOnce.Do(func() { close(stop) })
		wg.Wait()
	}()
	for w := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := writeAndRead(ctx, st, acc.ID, fmt.Sprintf("w%d-%d", w, i%64), &acknowledged); err != nil {
					if failed.Add(1) <= 5 {
						t.Errorf("writer %d: %v", w, err)
					}
					continue
				}
				written.Add(1)
			}
		})
	}
	// Each other process opens the file while the writers go on, and the
	// writers go on after it.
	waitWrites := func(n int64) {
		t.Helper()
		target := written.Load() + n
		for written.Load() < target && failed.Load() == 0 {
			select {
			case <-ctx.Done():
				t.Fatalf("the writers made %d writes, want %d", written.Load(), target)
			case <-time.After(time.Millisecond):
			}
		}
	}
	waitWrites(200)
	for range 3 {
		runCLI(t, path)
		waitWrites(200)
	}
	stopOnce.Do(func() { close(stop) })
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d of %d writes failed after other processes opened the file", n, n+written.Load())
	}

	// What was acknowledged is there, read by a fresh store, and so is
	// what the other processes created.
	accounts, err := st.ListAccounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(accounts) != 4 {
		t.Fatalf("%d accounts, want the writers' and the 3 the other processes created", len(accounts))
	}
	checkAcknowledged(ctx, t, st, acc.ID, &acknowledged)
}

// checkAcknowledged fails t unless every person of acknowledged (external
// id to email) holds the email last acknowledged for it.
func checkAcknowledged(ctx context.Context, t *testing.T, st store.Store, accountID string, acknowledged *sync.Map) {
	t.Helper()
	acknowledged.Range(func(k, v any) bool {
		p, _, err := st.UpsertPerson(ctx, accountID, domain.PersonUpsert{ExternalID: opt(k.(string))}, store.Write{Now: time.Now().UTC(), Window: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if p.Email == nil || *p.Email != v.(string) {
			t.Fatalf("person %s has email %v, want the acknowledged %s", k, p.Email, v)
		}
		return true
	})
}

// writeAndRead upserts the person of external id ext with a new email,
// records it as acknowledged, and reads it back.
func writeAndRead(ctx context.Context, st store.Store, accountID, ext string, acknowledged *sync.Map) error {
	email := domain.NewID("e") + "@example.org"
	p, _, err := st.UpsertPerson(ctx, accountID, domain.PersonUpsert{ExternalID: opt(ext), Email: opt(email), FirstName: opt(ext)},
		store.Write{Now: time.Now().UTC(), Window: time.Minute})
	if err != nil {
		return err
	}
	acknowledged.Store(ext, email)
	got, err := st.GetPerson(ctx, accountID, p.ID)
	if err != nil {
		return err
	}
	if got.Email == nil || *got.Email != email {
		return fmt.Errorf("read %v back after writing %s", got.Email, email)
	}
	return nil
}

func opt(v string) domain.Opt[string] { return domain.Opt[string]{Set: true, Value: v} }
