package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"sync"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

func hashOf(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}

func testConsole(t *testing.T, newStore NewStore) {
	ctx := context.Background()
	t.Run("a session is found by its hash until it expires or ends", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		acc := NewAccount(t, st)
		key := newKey(acc, []domain.Scope{domain.ScopeTagsRead}, Epoch)
		cs := domain.ConsoleSession{IDHash: hashOf("s1"), AccountID: acc, KeyHash: key.Hash, CSRF: "c1",
			CreatedAt: Epoch, ExpiresAt: Epoch.Add(time.Hour)}
		if err := st.CreateConsoleSession(ctx, cs); err != nil {
			t.Fatal(err)
		}
		got, err := st.ConsoleSession(ctx, hashOf("s1"), Epoch.Add(time.Minute))
		if err != nil || got.AccountID != acc || !bytes.Equal(got.KeyHash, key.Hash) || got.CSRF != "c1" ||
			!got.ExpiresAt.Equal(cs.ExpiresAt) {
			t.Fatalf("session: %+v, %v", got, err)
		}
		_, err = st.ConsoleSession(ctx, hashOf("s2"), Epoch)
		wantNotFound(t, "another token", err)
		_, err = st.ConsoleSession(ctx, hashOf("s1"), Epoch.Add(time.Hour))
		wantNotFound(t, "an expired session", err)
		if err := st.EndConsoleSession(ctx, hashOf("s1")); err != nil {
			t.Fatal(err)
		}
		_, err = st.ConsoleSession(ctx, hashOf("s1"), Epoch)
		wantNotFound(t, "an ended session", err)
		if err := st.EndConsoleSession(ctx, hashOf("s1")); err != nil {
			t.Fatalf("ending a session twice: %v", err)
		}
		// A new session drops the expired ones.
		old := domain.ConsoleSession{IDHash: hashOf("old"), AccountID: acc, KeyHash: key.Hash, CSRF: "c",
			CreatedAt: Epoch, ExpiresAt: Epoch.Add(time.Minute)}
		later := old
		later.IDHash, later.CreatedAt, later.ExpiresAt = hashOf("later"), Epoch.Add(time.Hour), Epoch.Add(2*time.Hour)
		if err := st.CreateConsoleSession(ctx, old); err != nil {
			t.Fatal(err)
		}
		if err := st.CreateConsoleSession(ctx, later); err != nil {
			t.Fatal(err)
		}
		_, err = st.ConsoleSession(ctx, hashOf("old"), Epoch)
		wantNotFound(t, "an expired session after a later sign-in", err)
	})

	t.Run("a link serves once, before it expires", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		acc := NewAccount(t, st)
		key := newKey(acc, nil, Epoch)
		link := domain.ConsoleLink{TokenHash: hashOf("l1"), AccountID: acc, KeyHash: key.Hash, ExpiresAt: Epoch.Add(10 * time.Minute)}
		if err := st.CreateConsoleLink(ctx, link); err != nil {
			t.Fatal(err)
		}
		// Followed twice at once, it serves one of them.
		var wg sync.WaitGroup
		taken := make([]*domain.ConsoleLink, 4)
		for i := range taken {
			wg.Go(func() { taken[i], _ = st.TakeConsoleLink(ctx, hashOf("l1"), Epoch.Add(time.Minute)) })
		}
		wg.Wait()
		n := 0
		for _, l := range taken {
			if l != nil {
				n++
				if l.AccountID != acc || !bytes.Equal(l.KeyHash, key.Hash) {
					t.Fatalf("link: %+v", l)
				}
			}
		}
		if n != 1 {
			t.Fatalf("the link served %d times, want once", n)
		}
		expired := link
		expired.TokenHash = hashOf("l2")
		if err := st.CreateConsoleLink(ctx, expired); err != nil {
			t.Fatal(err)
		}
		_, err := st.TakeConsoleLink(ctx, hashOf("l2"), Epoch.Add(10*time.Minute))
		wantNotFound(t, "an expired link", err)
		_, err = st.TakeConsoleLink(ctx, hashOf("l2"), Epoch)
		wantNotFound(t, "an expired link taken once already", err)
	})

	t.Run("a link is read without spending it", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		acc := NewAccount(t, st)
		key := newKey(acc, nil, Epoch)
		link := domain.ConsoleLink{TokenHash: hashOf("l3"), AccountID: acc, KeyHash: key.Hash, ExpiresAt: Epoch.Add(10 * time.Minute)}
		if err := st.CreateConsoleLink(ctx, link); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			got, err := st.ConsoleLink(ctx, hashOf("l3"), Epoch.Add(time.Minute))
			if err != nil || got.AccountID != acc || !bytes.Equal(got.KeyHash, key.Hash) || !got.ExpiresAt.Equal(link.ExpiresAt) {
				t.Fatalf("reading the link: %+v, %v", got, err)
			}
		}
		_, err := st.ConsoleLink(ctx, hashOf("l3"), Epoch.Add(10*time.Minute))
		wantNotFound(t, "an expired link, read", err)
		if _, err := st.TakeConsoleLink(ctx, hashOf("l3"), Epoch.Add(time.Minute)); err != nil {
			t.Fatalf("taking the link after reading it: %v", err)
		}
		_, err = st.ConsoleLink(ctx, hashOf("l3"), Epoch.Add(time.Minute))
		wantNotFound(t, "a link taken, read", err)
	})
}
