package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

func testAccounts(t *testing.T, newStore NewStore) {
	ctx := context.Background()
	t.Run("bootstrap only on an empty database, once under a race", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		var wg sync.WaitGroup
		made := make([]bool, 4)
		errs := make([]error, 4)
		for i := range made {
			wg.Add(1)
			go func() {
				defer wg.Done()
				k := newKey("acc_default", []domain.Scope{domain.ScopeTagsRead}, Epoch)
				made[i], errs[i] = st.Bootstrap(ctx, domain.Account{ID: "acc_default", Name: "default", CreatedAt: Epoch}, k)
			}()
		}
		wg.Wait()
		n := 0
		for i := range made {
			if errs[i] != nil {
				t.Fatalf("bootstrap %d: %v", i, errs[i])
			}
			if made[i] {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("bootstrap made the account %d times, want once", n)
		}
		keys, err := st.ListKeys(ctx, "acc_default")
		if err != nil || len(keys) != 1 {
			t.Fatalf("keys after bootstrap: %d, %v; want 1", len(keys), err)
		}
		again, err := st.Bootstrap(ctx, domain.Account{ID: "acc_other", Name: "x", CreatedAt: Epoch}, newKey("acc_other", nil, Epoch))
		if err != nil || again {
			t.Fatalf("bootstrap on a non-empty database: made=%v err=%v", again, err)
		}
	})
	t.Run("create, get, list", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		a := NewAccount(t, st)
		b := NewAccount(t, st)
		got, err := st.GetAccount(ctx, a)
		if err != nil || got.ID != a || !got.CreatedAt.Equal(Epoch) {
			t.Fatalf("get account: %+v, %v", got, err)
		}
		if _, err := st.GetAccount(ctx, "acc_missing"); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("missing account: %v, want ErrNotFound", err)
		}
		list, err := st.ListAccounts(ctx)
		if err != nil || len(list) != 2 {
			t.Fatalf("list: %d, %v", len(list), err)
		}
		ids := map[string]bool{list[0].ID: true, list[1].ID: true}
		if !ids[a] || !ids[b] {
			t.Fatalf("list holds %v, want %s and %s", ids, a, b)
		}
	})
}

func newKey(account string, scopes []domain.Scope, now time.Time) domain.APIKey {
	secret := domain.RandomHex(16)
	sum := sha256.Sum256([]byte(secret))
	return domain.APIKey{
		ID: domain.NewID("key"), AccountID: account, Prefix: "pds_" + secret[:8], LastFour: secret[len(secret)-4:],
		Hash: sum[:], Scopes: scopes, CreatedAt: now,
	}
}

func testKeys(t *testing.T, newStore NewStore) {
	ctx := context.Background()
	st := newStore(t)
	a := NewAccount(t, st)
	other := NewAccount(t, st)

	k := newKey(a, []domain.Scope{domain.ScopePersonsRead, domain.ScopeTagsWrite}, Epoch)
	name := "crm sync"
	limit := 42
	exp := Epoch.Add(time.Hour)
	k.Name, k.RateLimit, k.ExpiresAt = &name, &limit, &exp
	if err := st.CreateKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateKey(ctx, newKey(other, []domain.Scope{domain.ScopeTagsRead}, Epoch)); err != nil {
		t.Fatal(err)
	}

	got, err := st.KeyByHash(ctx, k.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != k.ID || got.AccountID != a || !bytes.Equal(got.Hash, k.Hash) || *got.Name != name ||
		*got.RateLimit != 42 || !got.ExpiresAt.Equal(exp) || got.RevokedAt != nil || len(got.Scopes) != 2 ||
		got.Scopes[0] != domain.ScopePersonsRead || got.Prefix != k.Prefix || got.LastFour != k.LastFour {
		t.Fatalf("key read back as %+v", got)
	}
	if _, err := st.KeyByHash(ctx, []byte("nope")); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("unknown hash: %v", err)
	}

	list, err := st.ListKeys(ctx, a)
	if err != nil || len(list) != 1 || list[0].ID != k.ID {
		t.Fatalf("an account lists only its own keys: %+v, %v", list, err)
	}

	used := Epoch.Add(time.Minute)
	if err := st.TouchKey(ctx, k.ID, used); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RevokeKey(ctx, k.ID, Epoch.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RevokeKey(ctx, k.ID, Epoch.Add(3*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got, err = st.KeyByHash(ctx, k.Hash); err != nil {
		t.Fatalf("read the revoked key back: %v", err)
	}
	if got.RevokedAt == nil || !got.RevokedAt.Equal(Epoch.Add(2*time.Minute)) || !got.LastUsedAt.Equal(used) {
		t.Fatalf("revoked key: revoked_at %v last_used_at %v", got.RevokedAt, got.LastUsedAt)
	}
	if got.Usable(Epoch) {
		t.Fatal("a revoked key is usable")
	}
	if _, err := st.RevokeKey(ctx, "key_missing", Epoch); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("revoke a missing key: %v", err)
	}
}

func testRate(t *testing.T, newStore NewStore) {
	ctx := context.Background()
	st := newStore(t)
	w1, w2 := Epoch, Epoch.Add(time.Minute)
	lease := func(key string, w time.Time, limit, want, wantGranted, wantTaken int) {
		t.Helper()
		g, n, err := st.LeaseRate(ctx, key, w, limit, want)
		if err != nil || g != wantGranted || n != wantTaken {
			t.Fatalf("lease %d of %s's %d: granted %d, taken %d, %v; want %d, %d", want, key, limit, g, n, err, wantGranted, wantTaken)
		}
	}
	for i := 1; i <= 3; i++ {
		lease("key_a", w1, 10, 1, 1, i)
	}
	lease("key_a", w1, 10, 4, 4, 7)
	// The last slice is what is left, then nothing: the leases of every
	// instance together never pass the limit.
	lease("key_a", w1, 10, 4, 3, 10)
	lease("key_a", w1, 10, 4, 0, 10)
	lease("key_b", w1, 10, 1, 1, 1) // another key's count starts afresh
	lease("key_a", w2, 10, 1, 1, 1) // and so does a new window
	lease("key_c", w1, 2, 5, 2, 2)  // a first slice larger than the limit
	if n, err := st.RateCount(ctx, "key_a", w1); err != nil || n != 10 {
		t.Fatalf("rate count: %d, %v", n, err)
	}
	if err := st.PruneRate(ctx, w2); err != nil {
		t.Fatal(err)
	}
	if n, err := st.RateCount(ctx, "key_a", w1); err != nil || n != 0 {
		t.Fatalf("pruned window still counts %d, %v", n, err)
	}
	if n, err := st.RateCount(ctx, "key_a", w2); err != nil || n != 1 {
		t.Fatalf("current window lost by prune: %d, %v", n, err)
	}
}
