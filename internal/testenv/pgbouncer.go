package testenv

import (
	"context"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/pds-dev/pds/internal/bouncer"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/store/postgres"
)

// PgBouncer is PostgreSQL through a pooler in transaction mode: Debian's
// pgbouncer (internal/bouncer), started once per test binary in front of
// the server of PDS_TEST_POSTGRES_URL with a server pool of
// BouncerPoolSize connections per database. Each database is a fresh
// schema, reached through a database entry of its own whose server
// connections start with that search_path, since a search_path sent by the
// client would be refused.
var PgBouncer = Engine{
	Name:        "pgbouncer",
	NewDatabase: bouncedSchema,
	Open: func(t testing.TB, u string) store.Store {
		st, err := postgres.Open(context.Background(), u, postgres.Options{})
		if err != nil {
			t.Fatalf("open postgres through pgbouncer: %v", err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	},
}

// BouncerPoolSize is the server connections the test pooler opens per
// database: fewer than one instance's own pool, as in a fleet.
const BouncerPoolSize = 5

var (
	bouncerOnce sync.Once
	theBouncer  *bouncer.Bouncer
	bouncerErr  error
)

// Bouncer starts the test binary's pgbouncer on first use and returns it.
// Without pgbouncer the test skips, except under CI, where that is a
// failure.
func Bouncer(t testing.TB) *bouncer.Bouncer {
	t.Helper()
	base := PostgresURL(t)
	bin := bouncer.Binary()
	if bin == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set but pgbouncer is not installed (.ci/run installs Debian's pgbouncer)")
		}
		t.Skip("pgbouncer is not installed; apt-get install pgbouncer to run the pooler tests")
	}
	bouncerOnce.Do(func() { theBouncer, bouncerErr = bouncer.Start(bin, base, BouncerPoolSize) })
	if bouncerErr != nil {
		t.Fatalf("starting pgbouncer: %v", bouncerErr)
	}
	return theBouncer
}

// bouncedSchema makes a fresh schema, as postgresSchema does, reached
// through the pooler.
func bouncedSchema(t testing.TB) string {
	b := Bouncer(t)
	direct, err := url.Parse(postgresSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	q, err := url.ParseQuery(direct.RawQuery)
	if err != nil {
		t.Fatal(err)
	}
	u, err := b.AddSchema(context.Background(), q.Get("search_path"))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// DirectOf is the direct URL of a database PgBouncer.NewDatabase made: the
// same schema, without the pooler in between.
func DirectOf(t testing.TB, bounced string) string {
	u, err := url.Parse(bounced)
	if err != nil {
		t.Fatal(err)
	}
	direct, err := postgres.WithSetting(PostgresURL(t), "search_path", strings.TrimPrefix(u.Path, "/"))
	if err != nil {
		t.Fatal(err)
	}
	return direct
}
