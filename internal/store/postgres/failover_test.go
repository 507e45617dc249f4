package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/bouncer"
	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/pgcluster"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/store/postgres"
	"github.com/pds-dev/pds/internal/store/storetest"
	"github.com/pds-dev/pds/internal/testenv"
)

// outageDeadline is each write's deadline while the synchronous standby is
// away: its commit waits for the standby until then.
const outageDeadline = time.Second

// storeWrite is one kind of write, run against a store made ready by
// newWrites.
type storeWrite struct {
	name string
	run  func(ctx context.Context, st store.Store, n int) error
}

// writeKinds are the writes of persons, tags and breadcrumbs, those that
// change something and those that change nothing (an unchanged upsert, a
// replayed breadcrumb, a tag held or not held), for one account with a
// person p and tags held and loose (p holds held, not loose).
func writeKinds(acc, p, held, loose string) []storeWrite {
	w := func() store.Write { return store.Write{Now: time.Now(), Window: time.Minute} }
	str := func(s string) domain.Opt[string] { return domain.Opt[string]{Set: true, Value: s} }
	ref := func(s string) *string { return &s }
	return []storeWrite{
		{"a new person", func(ctx context.Context, st store.Store, n int) error {
			_, _, err := st.UpsertPerson(ctx, acc, domain.PersonUpsert{ExternalID: str(fmt.Sprintf("new-%d", n))}, w())
			return err
		}},
		{"an upsert that changes the person", func(ctx context.Context, st store.Store, n int) error {
			_, _, err := st.UpsertPerson(ctx, acc, domain.PersonUpsert{ExternalID: str("p"), FirstName: str(fmt.Sprint("n", n))}, w())
			return err
		}},
		{"an upsert that changes nothing", func(ctx context.Context, st store.Store, _ int) error {
			_, _, err := st.UpsertPerson(ctx, acc, domain.PersonUpsert{ExternalID: str("p")}, w())
			return err
		}},
		{"an update that changes nothing", func(ctx context.Context, st store.Store, _ int) error {
			_, err := st.UpdatePerson(ctx, acc, p, domain.PersonUpdate{}, w())
			return err
		}},
		{"a breadcrumb", func(ctx context.Context, st store.Store, _ int) error {
			_, _, err := st.AppendBreadcrumb(ctx, acc, domain.BreadcrumbInput{Flavor: "page_view", ExternalID: ref("p")}, w())
			return err
		}},
		{"a breadcrumb replayed under its Idempotency-Key", func(ctx context.Context, st store.Store, _ int) error {
			_, _, err := st.AppendBreadcrumb(ctx, acc, domain.BreadcrumbInput{ID: domain.BreadcrumbID(acc, "replayed"),
				Flavor: "page_view", PersonID: &p}, w())
			return err
		}},
		{"attaching a tag the person holds", func(ctx context.Context, st store.Store, _ int) error {
			_, err := st.AddPersonTags(ctx, acc, p, []string{held}, w())
			return err
		}},
		{"detaching a tag the person does not hold", func(ctx context.Context, st store.Store, _ int) error {
			return st.RemovePersonTag(ctx, acc, p, loose, w())
		}},
		{"a new tag", func(ctx context.Context, st store.Store, n int) error {
			_, _, err := st.CreateTag(ctx, domain.Tag{ID: domain.NewID(domain.TagIDPrefix), AccountID: acc,
				Name: fmt.Sprint("tag-", n), Context: "person", DateCreated: domain.T(time.Now())})
			return err
		}},
	}
}

// TestSyncStandbyOutageAcknowledgesNothing: with the synchronous standby
// stopped, no write succeeds, whether it changes something or nothing:
// each is refused as a timeout at its deadline, since what it wrote, or
// what it read, may not survive a failover. Once the standby streams
// again, every kind succeeds.
func TestSyncStandbyOutageAcknowledgesNothing(t *testing.T) {
	t.Parallel()
	cluster := testenv.NewPGCluster(t, pgcluster.Options{Synchronous: true})
	st, err := postgres.Open(context.Background(), cluster.URL("postgres"), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	acc, p, held, loose := writesReady(t, st)
	kinds := writeKinds(acc, p, held, loose)

	standby := cluster.Other(cluster.Primary())
	if err := standby.Stop("fast"); err != nil {
		t.Fatal(err)
	}
	var wrong []string
	for i, k := range kinds {
		ctx, cancel := context.WithTimeout(context.Background(), outageDeadline)
		start := time.Now()
		err := st.Classify(k.run(ctx, st, i))
		cancel()
		var ue *domain.UnavailableError
		if !errors.As(err, &ue) || ue.Cause != domain.CauseTimeout {
			wrong = append(wrong, fmt.Sprintf("%s: %v after %s, want a database_timeout refusal", k.name, err,
				time.Since(start).Round(time.Millisecond)))
		}
	}
	if len(wrong) > 0 {
		t.Errorf("with the synchronous standby stopped, %d of %d writes were not refused:\n%s", len(wrong), len(kinds),
			strings.Join(wrong, "\n"))
	}

	if err := standby.Start(); err != nil {
		t.Fatal(err)
	}
	if err := cluster.WaitStreaming(standby); err != nil {
		t.Fatal(err)
	}
	for i, k := range kinds {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := k.run(ctx, st, len(kinds)+i); err != nil {
			t.Errorf("%s, with the standby back: %v", k.name, err)
		}
		cancel()
	}
}

// writesReady makes an account with a person (external_id "p") holding one
// tag and not another, and a breadcrumb to replay.
func writesReady(t *testing.T, st store.Store) (acc, person, held, loose string) {
	t.Helper()
	ctx := context.Background()
	acc = storetest.NewAccount(t, st)
	w := store.Write{Now: time.Now(), Window: time.Minute}
	p, _, err := st.UpsertPerson(ctx, acc, domain.PersonUpsert{ExternalID: domain.Opt[string]{Set: true, Value: "p"}}, w)
	if err != nil {
		t.Fatal(err)
	}
	var tags []string
	for _, name := range []string{"held", "loose"} {
		tag, _, err := st.CreateTag(ctx, domain.Tag{ID: domain.NewID(domain.TagIDPrefix), AccountID: acc, Name: name,
			Context: "person", DateCreated: domain.T(time.Now())})
		if err != nil {
			t.Fatal(err)
		}
		tags = append(tags, tag.ID)
	}
	if _, err := st.AddPersonTags(ctx, acc, p.ID, tags[:1], w); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.AppendBreadcrumb(ctx, acc, domain.BreadcrumbInput{ID: domain.BreadcrumbID(acc, "replayed"),
		Flavor: "page_view", PersonID: &p.ID}, w); err != nil {
		t.Fatal(err)
	}
	return acc, p.ID, tags[0], tags[1]
}

// TestStandbyBehindPlainURLIsRefused: a URL that names one server, a
// primary until a failover made it a standby, directly and through
// PgBouncer: every write is refused as database_unreachable for want of a
// writable primary (25006 was a 500), and Ping, which /readyz asks, says
// so.
func TestStandbyBehindPlainURLIsRefused(t *testing.T) {
	t.Parallel()
	for _, through := range []string{"direct", "pgbouncer"} {
		t.Run(through, func(t *testing.T) {
			t.Parallel()
			cluster := testenv.NewPGCluster(t, pgcluster.Options{})
			first := cluster.Primary()
			url := first.URL("postgres")
			if through == "pgbouncer" {
				url = bouncerFor(t, url)
			}
			st, err := postgres.Open(context.Background(), url, postgres.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			acc := storetest.NewAccount(t, st)
			if err := first.Kill(); err != nil {
				t.Fatal(err)
			}
			if err := cluster.Promote(cluster.Other(first)); err != nil {
				t.Fatal(err)
			}
			if err := cluster.Rejoin(first); err != nil {
				t.Fatal(err)
			}
			// A pooler that saw its server go away waits a while before it
			// logs in again (server_login_retry): until then, refusals for
			// an unreachable server.
			deadline := time.Now().Add(time.Minute)
			for i, seen := 0, 0; seen < 3; i++ {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, _, err := st.UpsertPerson(ctx, acc, domain.PersonUpsert{ExternalID: domain.Opt[string]{Set: true, Value: fmt.Sprint("p", i)}},
					store.Write{Now: time.Now(), Window: time.Minute})
				cancel()
				var ue *domain.UnavailableError
				if err = st.Classify(err); !errors.As(err, &ue) {
					t.Fatalf("write %d on a standby: %v, want a refusal", i, err)
				}
				if ue.Cause == domain.CauseUnreachable && errors.Is(err, domain.ErrNoPrimary) {
					seen++
				}
				if time.Now().After(deadline) {
					t.Fatalf("writes on a standby still refused for another cause after a minute: %v", err)
				}
				time.Sleep(50 * time.Millisecond)
			}
			if err := st.Ping(context.Background()); !errors.Is(st.Classify(err), domain.ErrNoPrimary) {
				t.Errorf("Ping on a standby: %v, want no writable primary", err)
			}
		})
	}
}

// bouncerFor starts Debian's pgbouncer in transaction mode in front of the
// server of url for one test, and returns the pooler's URL of its
// database's public schema. Without pgbouncer the test skips, except under
// CI.
func bouncerFor(t *testing.T, url string) string {
	t.Helper()
	bin := bouncer.Binary()
	if bin == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set but pgbouncer is not installed")
		}
		t.Skip("pgbouncer is not installed")
	}
	b, err := bouncer.Start(bin, url, testenv.BouncerPoolSize)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	u, err := b.AddSchema(context.Background(), "public")
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestRevokedKeyStaysRevokedAcrossFailover: a failover to a standby that
// lacks a key change the old primary made (an asynchronous standby, away
// when the change was made), after which a key is revoked on the new
// primary: the cache does not keep the revoked key, though the new
// primary's count of key changes climbs back to the one the cache saw. With
// the cache reading the counter (behind a pooler) and listening (directly).
func TestRevokedKeyStaysRevokedAcrossFailover(t *testing.T) {
	t.Parallel()
	for _, sync := range []string{"polling", "listening"} {
		t.Run(sync, func(t *testing.T) {
			t.Parallel()
			cluster := testenv.NewPGCluster(t, pgcluster.Options{})
			open := postgres.OpenPolling
			if sync == "listening" {
				open = func(ctx context.Context, url string) (store.Store, error) {
					return postgres.Open(ctx, url, postgres.Options{})
				}
			}
			st, err := open(context.Background(), cluster.URL("postgres"))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			ctx := context.Background()
			acc := storetest.NewAccount(t, st)
			var keys []domain.APIKey
			for i := range 2 {
				k := domain.APIKey{ID: domain.NewID("key"), AccountID: acc, Prefix: fmt.Sprint("pds_k", i), LastFour: "abcd",
					Hash: []byte(fmt.Sprintf("%032d", i)), Scopes: []domain.Scope{domain.ScopePersonsRead}, CreatedAt: time.Now()}
				if err := st.CreateKey(ctx, k); err != nil {
					t.Fatal(err)
				}
				keys = append(keys, k)
			}
			kept, lost := keys[0], keys[1]

			// A key change the standby never gets.
			old := cluster.Primary()
			standby := cluster.Other(old)
			if err := standby.Stop("fast"); err != nil {
				t.Fatal(err)
			}
			if _, err := st.RevokeKey(ctx, lost.ID, time.Now()); err != nil {
				t.Fatal(err)
			}
			if k, err := st.KeyByHash(ctx, kept.Hash); err != nil || k.RevokedAt != nil {
				t.Fatalf("the key before the failover: %v, %v", k, err)
			}
			cached := time.Now()

			if err := old.Kill(); err != nil {
				t.Fatal(err)
			}
			if err := standby.Start(); err != nil {
				t.Fatal(err)
			}
			if err := cluster.Promote(standby); err != nil {
				t.Fatal(err)
			}
			if err := standby.Exec(fmt.Sprintf(`UPDATE api_keys SET revoked_at = %d WHERE id = '%s'`, time.Now().UnixMilli(), kept.ID)); err != nil {
				t.Fatal(err)
			}
			// Every read of the key, for as long as the cache could keep the
			// entry read before the failover (5 s, sqlstore's keyCacheMaxAge),
			// must show it revoked; reads fail until the promoted standby
			// serves.
			deadline := time.Now().Add(time.Minute)
			served := 0
			for served == 0 || time.Since(cached) < 6*time.Second {
				k, err := st.KeyByHash(ctx, kept.Hash)
				if err == nil {
					served++
					if k.RevokedAt == nil {
						t.Fatalf("the key revoked on the new primary passed as valid, %s after it was cached (read %d)",
							time.Since(cached).Round(time.Millisecond), served)
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("the key could not be read within a minute of the promotion: %v", err)
				}
				time.Sleep(20 * time.Millisecond)
			}
			t.Logf("%d reads of the key, all revoked, until %s after it was cached", served, time.Since(cached).Round(time.Millisecond))
		})
	}
}
