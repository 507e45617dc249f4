package sqlstore_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/testenv"
)

// fakeSync is a KeySync the test drives.
type fakeSync struct {
	mu    sync.Mutex
	err   error
	calls int
}

func (f *fakeSync) Sync(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return f.err
}

func (f *fakeSync) Close() error { return nil }

func (f *fakeSync) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

// TestKeyCache: what the key cache serves without a statement, and when it
// reads the database instead (the KeySync cannot vouch, the key was
// forgotten or changed here, the entry is old, the hash is unknown).
func TestKeyCache(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rs := openCounting(t, eng)
		ks := &fakeSync{}
		rs.CacheKeys(ks)
		now := time.Now()
		rs.SetKeyCacheClock(func() time.Time { return now })
		ctx := context.Background()
		acc, _ := rs.seedAccount(t, 0)
		k, _, err := service.MintKey(ctx, rs, service.KeyRequest{AccountID: acc, Scopes: domain.AllScopes}, seedEpoch)
		if err != nil {
			t.Fatal(err)
		}
		lookup := func(want int64) *domain.APIKey {
			t.Helper()
			var got *domain.APIKey
			if n := rs.countStatements(func() {
				if got, err = rs.KeyByHash(ctx, k.Hash); err != nil {
					t.Fatal(err)
				}
			}); n != want {
				t.Fatalf("key lookup ran %d statements, want %d", n, want)
			}
			if got.ID != k.ID || got.AccountID != acc {
				t.Fatalf("looked up %+v, want key %s of %s", got, k.ID, acc)
			}
			return got
		}
		lookup(1)
		cached := lookup(0)
		cached.LastUsedAt = &now // a caller's change stays with the caller
		if lookup(0).LastUsedAt != nil {
			t.Fatal("a caller's change reached the cached key")
		}

		ks.fail(errors.New("not listening"))
		lookup(1)
		lookup(1)
		ks.fail(nil)
		lookup(0)

		rs.ForgetKey(k.Hash)
		lookup(1)
		lookup(0)
		rs.ForgetKeys()
		lookup(1)

		now = now.Add(6 * time.Second) // past keyCacheMaxAge
		lookup(1)
		lookup(0)

		touched := seedEpoch.Add(time.Minute)
		if err := rs.TouchKey(ctx, k.ID, touched); err != nil {
			t.Fatal(err)
		}
		if got := lookup(0); got.LastUsedAt == nil || !got.LastUsedAt.Equal(touched) {
			t.Fatalf("after this instance's touch the cached key was last used %v, want %v", got.LastUsedAt, touched)
		}
		if _, err := rs.RevokeKey(ctx, k.ID, touched); err != nil {
			t.Fatal(err)
		}
		if got := lookup(1); got.RevokedAt == nil {
			t.Fatal("a key revoked by this instance is served unrevoked")
		}

		unknown := make([]byte, 32)
		for range 3 {
			if n := rs.countStatements(func() {
				if _, err := rs.KeyByHash(ctx, unknown); !errors.Is(err, domain.ErrNotFound) {
					t.Fatalf("unknown hash: %v", err)
				}
			}); n != 1 {
				t.Fatalf("an unknown hash ran %d statements, want 1: it must not be cached", n)
			}
		}
		if ks.calls == 0 {
			t.Fatal("the cache never asked its KeySync")
		}
	})
}
