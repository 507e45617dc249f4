package sqlstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/pds-dev/pds/internal/testenv"
)

// vouch is a KeySync that vouches for the cache, or fails.
type vouch struct{ err error }

func (v *vouch) Sync(context.Context) error { return v.err }
func (v *vouch) Close() error               { return nil }

// TestPersonCacheServesWithoutStatements: a person read once is served
// again with no statement while the KeySync vouches for the cache; after
// ForgetPersons, or when the KeySync cannot vouch, it is read again.
// (TestPersonCacheSeesEveryCommit, in the sqlite package, holds that
// SQLite's KeySync empties it on every commit.)
func TestPersonCacheServesWithoutStatements(t *testing.T) {
	rs := openCounting(t, testenv.SQLite)
	acc, _ := rs.seedAccount(t, 10)
	ks := &vouch{}
	rs.CachePersons(ks)
	ctx := context.Background()
	id := seededPerson(acc, 3)
	get := func() int64 {
		t.Helper()
		return rs.countStatements(func() {
			p, err := rs.GetPerson(ctx, acc, id)
			if err != nil || p.ID != id {
				t.Fatalf("get person: %+v, %v", p, err)
			}
		})
	}
	if n := get(); n == 0 {
		t.Fatal("the first read ran no statement")
	}
	if n := get(); n != 0 {
		t.Fatalf("a cached person cost %d statements", n)
	}
	// Cached for acc, the person is still nobody's in another account.
	if _, err := rs.GetPerson(ctx, "acc_other", id); err == nil {
		t.Fatal("another account was served the cached person")
	}
	rs.ForgetPersons()
	if n := get(); n == 0 {
		t.Fatal("a person was served from a cache emptied since")
	}
	ks.err = errors.New("cannot vouch")
	if n := get(); n == 0 {
		t.Fatal("a person was served from a cache nothing vouched for")
	}
	if _, err := rs.GetPerson(ctx, acc, "per_missing"); err == nil {
		t.Fatal("an unknown person was found")
	}
}
