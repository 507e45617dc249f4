package sqlite_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/store/sqlite"
)

// TestSharedCounterReadsMissNoRevocation: while other requests keep the
// counter's reads busy, a key revoked through another store on the same
// file (another process, as far as the cache can tell) is refused on the
// very next lookup. A lookup that joined a read already under way, which
// may have started before the revocation committed, would serve the key
// unrevoked.
func TestSharedCounterReadsMissNoRevocation(t *testing.T) {
	ctx := context.Background()
	server, admin, acc := twoProcesses(t)
	now := acc.CreatedAt
	mint := func() domain.APIKey {
		t.Helper()
		k, _, err := service.MintKey(ctx, admin, service.KeyRequest{AccountID: acc.ID, Scopes: domain.AllScopes}, now)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}

	busy := mint()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := server.KeyByHash(ctx, busy.Hash); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()

	for i := range 100 {
		k := mint()
		if got, err := server.KeyByHash(ctx, k.Hash); err != nil || got.RevokedAt != nil {
			t.Fatalf("round %d: fresh key: %+v, %v", i, got, err)
		}
		if _, err := admin.RevokeKey(ctx, k.ID, now); err != nil {
			t.Fatal(err)
		}
		got, err := server.KeyByHash(ctx, k.Hash)
		if err != nil {
			t.Fatal(err)
		}
		if got.RevokedAt == nil {
			t.Fatalf("round %d: a key revoked by another process was served unrevoked", i)
		}
	}
}

// twoProcesses opens two stores on one new file, as two processes would
// (the server, and another that changes what the server caches), and
// makes an account through the second.
func twoProcesses(t *testing.T) (server, other store.Store, acc domain.Account) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "pds.db")
	for _, st := range []*store.Store{&server, &other} {
		var err error
		if *st, err = sqlite.Open(ctx, path); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { (*st).Close() })
	}
	acc = domain.Account{ID: domain.NewID("acc"), Name: "a", CreatedAt: time.Now().UTC()}
	if err := other.CreateAccount(ctx, acc); err != nil {
		t.Fatal(err)
	}
	return server, other, acc
}

// TestCounterReadOnlyAfterACommit: a key lookup reads the counter of key
// changes only when something was committed since the last read began (the
// WAL index's header says so): a lookup with nothing committed meanwhile
// costs no read, one after another process's commit does.
func TestCounterReadOnlyAfterACommit(t *testing.T) {
	ctx := context.Background()
	server, admin, acc := twoProcesses(t)
	k, _, err := service.MintKey(ctx, admin, service.KeyRequest{AccountID: acc.ID, Scopes: domain.AllScopes}, acc.CreatedAt)
	if err != nil {
		t.Fatal(err)
	}
	lookup := func() {
		t.Helper()
		if _, err := server.KeyByHash(ctx, k.Hash); err != nil {
			t.Fatal(err)
		}
	}
	lookup()
	before := sqlite.CounterReads(server)
	for range 100 {
		lookup()
	}
	if n := sqlite.CounterReads(server) - before; n != 0 {
		t.Fatalf("%d reads of the counter for lookups with nothing committed", n)
	}
	if _, err := admin.RevokeKey(ctx, k.ID, acc.CreatedAt); err != nil {
		t.Fatal(err)
	}
	got, err := server.KeyByHash(ctx, k.Hash)
	if err != nil || got.RevokedAt == nil {
		t.Fatalf("after the revocation: %+v, %v", got, err)
	}
	if n := sqlite.CounterReads(server) - before; n != 1 {
		t.Fatalf("%d reads of the counter after one commit, want 1", n)
	}
}
