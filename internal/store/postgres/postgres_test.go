package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/store/postgres"
	"github.com/pds-dev/pds/internal/store/storetest"
	"github.com/pds-dev/pds/internal/testenv"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	testenv.PostgresURL(t)
	storetest.Run(t, testenv.Postgres.NewStore)
}

// TestConformanceThroughPgBouncer: the whole suite through a pooler in
// transaction mode with its defaults, whose server connections serve
// another client after each transaction.
func TestConformanceThroughPgBouncer(t *testing.T) {
	t.Parallel()
	testenv.Bouncer(t)
	storetest.Run(t, testenv.PgBouncer.NewStore)
}

// TestConcurrentStartsMigrateOnce: instances starting together on one empty
// database all come up and apply each migration once, directly and
// through a pooler in transaction mode; the migrations' lock takes no
// session's lock, which a pooler would take on one server connection and
// release on another.
func TestConcurrentStartsMigrateOnce(t *testing.T) {
	t.Parallel()
	testenv.ForEachPostgres(t, func(t *testing.T, eng testenv.Engine) {
		concurrentStarts(t, eng)
	})
}

func concurrentStarts(t *testing.T, eng testenv.Engine) {
	db := eng.NewDatabase(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := postgres.Open(context.Background(), db, postgres.Options{})
			if err == nil {
				err = st.Ping(context.Background())
				st.Close()
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent start: %v", err)
		}
	}
	admin, err := sql.Open("pgx", db)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var versions, distinct int
	if err := admin.QueryRow(`SELECT count(*), count(DISTINCT version_id) FROM goose_db_version WHERE version_id > 0`).
		Scan(&versions, &distinct); err != nil {
		t.Fatal(err)
	}
	if versions != distinct || versions < 20 {
		t.Fatalf("goose recorded %d migrations, %d of them distinct: each must be applied once", versions, distinct)
	}
}

// TestKeyCacheAcrossInstances: with a direct connection to listen on, a
// key cached by one instance, revoked through another, is refused by the
// first on its very next lookup: while it listens, and while its listening
// connection is lost (it reads the database then) until it listens again.
func TestKeyCacheAcrossInstances(t *testing.T) {
	t.Parallel()
	db := testenv.Postgres.NewDatabase(t)
	open := func() store.Store {
		st, err := postgres.Open(context.Background(), db, postgres.Options{DirectURL: db})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	a, b := open(), open()
	ctx := context.Background()
	acc := storetest.NewAccount(t, a)
	mint := func() domain.APIKey {
		k, _, err := service.MintKey(ctx, a, service.KeyRequest{AccountID: acc, Scopes: domain.AllScopes}, storetest.Epoch)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	lookup := func(k domain.APIKey, revoked bool) {
		t.Helper()
		got, err := b.KeyByHash(ctx, k.Hash)
		if err != nil || got.ID != k.ID || (got.RevokedAt != nil) != revoked {
			t.Fatalf("lookup of %s: %+v, %v; want revoked %v", k.ID, got, err, revoked)
		}
	}
	// listening waits for the key cache to listen on a backend other than
	// not (0: any).
	listening := func(not uint32) uint32 {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			if up, pid := postgres.KeyWatchState(b); up && pid != not {
				return pid
			}
			if time.Now().After(deadline) {
				t.Fatal("the key cache does not listen")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	k1, k2 := mint(), mint()
	lookup(k1, false) // starts listening
	listening(0)
	lookup(k1, false)
	lookup(k1, false) // from the cache
	if _, err := a.RevokeKey(ctx, k1.ID, storetest.Epoch); err != nil {
		t.Fatal(err)
	}
	lookup(k1, true)

	lookup(k2, false)
	admin, err := sql.Open("pgx", db)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	pid := listening(0)
	if _, err := admin.Exec(`SELECT pg_terminate_backend($1)`, pid); err != nil {
		t.Fatal(err)
	}
	// Revoked behind the cache's back: an operator's UPDATE, no notification
	// can reach a connection that is gone.
	if _, err := admin.Exec(`UPDATE api_keys SET revoked_at = 1 WHERE id = $1`, k2.ID); err != nil {
		t.Fatal(err)
	}
	lookup(k2, true)
	// It may not have noticed yet that its backend is gone: it must listen
	// on another one within the deadline.
	listening(pid)
	lookup(k2, true)
	k3 := mint()
	lookup(k3, false)
	lookup(k3, false)
	if _, err := admin.Exec(`DELETE FROM api_keys WHERE id = $1`, k3.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.KeyByHash(ctx, k3.Hash); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("a deleted key: %v", err)
	}
}

// TestCloseTwice: closing a store a second time returns, whether or not its
// key cache ever listened.
func TestCloseTwice(t *testing.T) {
	t.Parallel()
	db := testenv.Postgres.NewDatabase(t)
	for _, listen := range []bool{false, true} {
		st, err := postgres.Open(context.Background(), db, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if listen {
			if _, err := st.KeyByHash(context.Background(), make([]byte, 32)); !errors.Is(err, domain.ErrNotFound) {
				t.Fatal(err)
			}
		}
		st.Close()
		st.Close()
	}
}

// TestKeyCacheAcrossInstancesWithoutASession: with no --database-direct,
// a key cached by one instance and revoked, changed or deleted through
// another, or by an operator's statement, is seen so by the first on its
// very next lookup: through the pooler it reads the counter of key changes
// before each lookup; on the plain URL, a session of its own, it listens
// there (TestKeyCacheListensWithoutAPooler).
func TestKeyCacheAcrossInstancesWithoutASession(t *testing.T) {
	t.Parallel()
	testenv.ForEachPostgres(t, func(t *testing.T, eng testenv.Engine) {
		db := eng.NewDatabase(t)
		a, b := eng.Open(t, db), eng.Open(t, db)
		ctx := context.Background()
		acc := storetest.NewAccount(t, a)
		mint := func() domain.APIKey {
			k, _, err := service.MintKey(ctx, a, service.KeyRequest{AccountID: acc, Scopes: domain.AllScopes}, storetest.Epoch)
			if err != nil {
				t.Fatal(err)
			}
			return k
		}
		lookup := func(k domain.APIKey, revoked bool) {
			t.Helper()
			got, err := b.KeyByHash(ctx, k.Hash)
			if err != nil || got.ID != k.ID || (got.RevokedAt != nil) != revoked {
				t.Fatalf("lookup of %s: %+v, %v; want revoked %v", k.ID, got, err, revoked)
			}
		}
		k1, k2, k3 := mint(), mint(), mint()
		lookup(k1, false)
		lookup(k1, false) // from the cache
		if _, err := a.RevokeKey(ctx, k1.ID, storetest.Epoch); err != nil {
			t.Fatal(err)
		}
		lookup(k1, true)

		admin := eng.Raw(t, db)
		lookup(k2, false)
		if _, err := admin.Exec(`UPDATE api_keys SET revoked_at = 1 WHERE id = $1`, k2.ID); err != nil {
			t.Fatal(err)
		}
		lookup(k2, true)
		lookup(k3, false)
		if _, err := admin.Exec(`DELETE FROM api_keys WHERE id = $1`, k3.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := b.KeyByHash(ctx, k3.Hash); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("a deleted key: %v", err)
		}
	})
}

// TestSignaturesRedactedAtRest: attempts keep their signatures' time and
// scheme, not their values; migration 00140 redacts those recorded whole.
func TestSignaturesRedactedAtRest(t *testing.T) {
	t.Parallel()
	url := testenv.Postgres.NewDatabase(t)
	st := testenv.Postgres.Open(t, url)
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	storetest.SignaturesRedactedAtRest(t, st, db, func() error {
		return postgres.RerunMigration(context.Background(), url, 140)
	})
}

// TestIdentifiersNormalizedAtRest: migration 00210 puts identifiers an
// earlier version stored in another form into the normal form.
func TestIdentifiersNormalizedAtRest(t *testing.T) {
	t.Parallel()
	url := testenv.Postgres.NewDatabase(t)
	st := testenv.Postgres.Open(t, url)
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	storetest.IdentifiersNormalizedAtRest(t, st, db, func() error {
		return postgres.RerunMigration(context.Background(), url, 210)
	})
}

// TestConcurrentAppendsThroughAPooler: appends arriving together share
// one statement (the appender's arrays, its lock timeout set for its own
// transaction), directly and through a pooler in transaction mode: each
// lands once, for the person its identifier names, and the breadcrumbs'
// total counts every one.
func TestConcurrentAppendsThroughAPooler(t *testing.T) {
	t.Parallel()
	testenv.ForEachPostgres(t, func(t *testing.T, eng testenv.Engine) {
		st := eng.Open(t, eng.NewDatabase(t))
		ctx := context.Background()
		acc := storetest.NewAccount(t, st)
		w := store.Write{Now: storetest.Epoch, Window: time.Minute}
		persons := make([]string, 8)
		for i := range persons {
			p, _, err := st.UpsertPerson(ctx, acc, domain.PersonUpsert{ExternalID: domain.Opt[string]{Set: true, Value: fmt.Sprintf("ext-%d", i)}}, w)
			if err != nil {
				t.Fatal(err)
			}
			persons[i] = p.ID
		}
		const appends = 64
		var wg sync.WaitGroup
		for i := range appends {
			wg.Go(func() {
				ext := fmt.Sprintf("ext-%d", i%len(persons))
				b, _, err := st.AppendBreadcrumb(ctx, acc, domain.BreadcrumbInput{Flavor: "web", ExternalID: &ext},
					store.Write{Now: storetest.Epoch.Add(time.Duration(i) * time.Millisecond), Window: time.Minute})
				if err != nil || b.PersonID != persons[i%len(persons)] {
					t.Errorf("append %d by %s: person %q (%v), want %s", i, ext, b.PersonID, err, persons[i%len(persons)])
				}
			})
		}
		wg.Wait()
		for _, id := range persons {
			_, total, err := st.ListBreadcrumbs(ctx, acc, domain.BreadcrumbFilter{PersonID: &id}, domain.PageRequest{Page: 1, Size: 1})
			if err != nil || total != appends/len(persons) {
				t.Errorf("%s: %d breadcrumbs (%v), want %d", id, total, err, appends/len(persons))
			}
		}
		if _, total, err := st.ListBreadcrumbs(ctx, acc, domain.BreadcrumbFilter{}, domain.PageRequest{Page: 1, Size: 1}); err != nil || total != appends {
			t.Errorf("the account's breadcrumbs: %d (%v), want %d", total, err, appends)
		}
	})
}

// TestDeadlineEndsTheWaitOnTheServer: requests that give up at their
// deadline while waiting for a lock leave no wait running on the server
// (no setting is sent at connection: the deadline sends a cancel
// request), directly and through the pooler, which goes on serving: a
// client that closed a cancel request's connection before the pooler had
// passed it on crashed PgBouncer 1.18.
func TestDeadlineEndsTheWaitOnTheServer(t *testing.T) {
	t.Parallel()
	testenv.ForEachPostgres(t, func(t *testing.T, eng testenv.Engine) {
		db := eng.NewDatabase(t)
		st := eng.Open(t, db)
		ctx := context.Background()
		acc := storetest.NewAccount(t, st)
		p, _, err := st.UpsertPerson(ctx, acc, domain.PersonUpsert{ExternalID: domain.Opt[string]{Set: true, Value: "held"}},
			store.Write{Now: storetest.Epoch, Window: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		raw := eng.Raw(t, db)
		holder, err := raw.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer holder.Rollback() //nolint:errcheck // only its lock mattered
		if _, err := holder.Exec(`SELECT 1 FROM persons WHERE id = $1 FOR UPDATE`, p.ID); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make([]error, 16)
		for i := range errs {
			wg.Go(func() {
				wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
				defer cancel()
				_, errs[i] = st.UpdatePerson(wctx, acc, p.ID, domain.PersonUpdate{FirstName: domain.Opt[string]{Set: true, Value: "late"}},
					store.Write{Now: storetest.Epoch, Window: time.Minute})
			})
		}
		wg.Wait()
		for _, err := range errs {
			var ue *domain.UnavailableError
			if !errors.As(st.Classify(err), &ue) || ue.Cause != domain.CauseTimeout {
				t.Fatalf("an update past its deadline: %v, want a timeout", err)
			}
		}
		// While the lock is still held, nothing waits for it any more: the
		// server ends each cancelled statement in its own time, which the
		// one deadline leaves it on a loaded machine.
		deadline := time.Now().Add(30 * time.Second)
		for {
			var waiting int
			if err := holder.QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'
				AND query LIKE '%persons%'`).Scan(&waiting); err != nil {
				t.Fatal(err)
			}
			if waiting == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d statements still wait for the lock on the server 30 s after their requests gave up", waiting)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err := holder.Rollback(); err != nil {
			t.Fatal(err)
		}
		if _, err := st.UpdatePerson(ctx, acc, p.ID, domain.PersonUpdate{FirstName: domain.Opt[string]{Set: true, Value: "now"}},
			store.Write{Now: storetest.Epoch, Window: time.Minute}); err != nil {
			t.Fatalf("the store after the deadlines: %v", err)
		}
	})
}

// TestStatementsNamedOnlyInASessionOfTheirOwn: a store prepares its
// statements by name (each planned once per connection) only where a
// connection is a session of its own; through a pooler, which runs a
// connection's statements on backends of its choosing, it does not.
func TestStatementsNamedOnlyInASessionOfTheirOwn(t *testing.T) {
	t.Parallel()
	testenv.ForEachPostgres(t, func(t *testing.T, eng testenv.Engine) {
		own, err := postgres.OwnsSession(context.Background(), eng.NewDatabase(t))
		if err != nil {
			t.Fatal(err)
		}
		if want := eng.Name == testenv.Postgres.Name; own != want {
			t.Fatalf("a session of its own: %v, want %v", own, want)
		}
	})
}

// TestKeyCacheListensWithoutAPooler: a store whose URL gives sessions of
// their own listens for key changes there, with no --database-direct, and
// drops a revoked key at once; through a transaction-mode pooler it reads
// the counter instead, since the pooler would neither deliver notifications
// nor keep the session.
func TestKeyCacheListensWithoutAPooler(t *testing.T) {
	t.Parallel()
	db := testenv.Postgres.NewDatabase(t)
	direct, other := testenv.Postgres.Open(t, db), testenv.Postgres.Open(t, db)
	if !postgres.KeyCacheListens(direct) {
		t.Fatal("opened on a direct URL, the key cache polls; want it to listen")
	}
	ctx := context.Background()
	acc := storetest.NewAccount(t, direct)
	k, _, err := service.MintKey(ctx, direct, service.KeyRequest{AccountID: acc, Scopes: domain.AllScopes}, storetest.Epoch)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := direct.KeyByHash(ctx, k.Hash); err != nil || got.RevokedAt != nil {
		t.Fatalf("lookup before revoking: %+v, %v", got, err)
	}
	if _, err := other.RevokeKey(ctx, k.ID, storetest.Epoch.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got, err := direct.KeyByHash(ctx, k.Hash); err != nil || got.RevokedAt == nil {
		t.Fatalf("lookup after another instance revoked it: %+v, %v; want revoked", got, err)
	}

	testenv.Bouncer(t)
	if pooled := testenv.PgBouncer.NewStore(t); postgres.KeyCacheListens(pooled) {
		t.Fatal("opened through PgBouncer, the key cache listens; want it to poll")
	}
}
