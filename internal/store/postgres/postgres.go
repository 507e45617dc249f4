package postgres

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib" // also registers the "pgx" database/sql driver
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/pds-dev/pds/internal/secrets"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/store/sqlstore"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Options tune the connections of a store that serves requests.
type Options struct {
	// DirectURL, when set, reaches the same database as the URL Open is
	// given without a pooler in between (--database-direct): the
	// migrations, or the check of KeepSchema, run through it, and the key
	// cache LISTENs on a session of its own there (keyWatch), so that a
	// change to a key drops that key alone. Without it everything runs
	// through the URL, which may name a transaction-mode pooler: the key
	// cache then reads a counter of key changes (keyPoll), unless the
	// URL's connections turn out to be sessions of their own (no pooler),
	// when it listens there.
	DirectURL string
	// KeepSchema has Open leave the schema as it finds it: instead of
	// migrating, it refuses a database that lacks a migration of this
	// binary with a *schema.BehindError naming them (pds serve
	// --migrate=false, whose deploy runs pds migrate as a step of its own).
	KeepSchema bool
	// Secrets, when set, seals the secrets the database holds under the
	// operator's key (--secrets-key-file); nil keeps them in clear. Either
	// way Open refuses a database whose secrets are sealed under a key it
	// lacks.
	Secrets *secrets.Keyring
	// Replicas are streaming standbys of the primary the URL reaches
	// (--database-replica), each directly or through a pooler of its
	// own: the reads that are safe on one go to one that has replayed
	// every commit acknowledged before their request arrived
	// (replicas.go). One down at Open costs nothing.
	Replicas []string
	// routeEveryRead, for tests, routes the safe reads of every context,
	// each with a floor read then, as if each were a request of its own:
	// the conformance suite's calls are not requests.
	routeEveryRead bool
}

// defaultConnectTimeout bounds a connection attempt whose URL sets no
// connect_timeout: a frozen server accepts the TCP connection and never
// answers, and a pool that opens connections in the background would wait
// for it forever. With several hosts it bounds the attempt on each, and a
// host that hangs (a standby whose machine froze) would cost every new
// connection that long before the next host is tried: a second, within a
// request's deadline (the host that answered last is tried first anyway,
// preferLast).
const (
	defaultConnectTimeout          = "5"
	defaultMultiHostConnectTimeout = "1"
)

// withConnectTimeout is url with connect_timeout set to the default for
// its hosts, unless it sets one itself.
func withConnectTimeout(url string) (string, error) {
	u, _, err := parseURL(url)
	if err != nil {
		return "", err
	}
	timeout := defaultConnectTimeout
	if strings.Contains(u.Host, ",") {
		timeout = defaultMultiHostConnectTimeout
	}
	return withDefault(url, "connect_timeout", timeout)
}

// Open connects to the database at url and applies the migrations (or,
// with KeepSchema, checks that none is pending). Nothing it relies on
// outlives a transaction, so url may name a pooler in transaction mode
// (PgBouncer): no setting is sent at connection (a pooler refuses those it
// does not know), no statement is prepared by name (connConfig), no lock
// or LISTEN is held by a session, unless opts.DirectURL gives one.
func Open(ctx context.Context, url string, opts Options) (store.Store, error) {
	st, err := open(ctx, url, opts, false)
	if err != nil {
		return nil, err // not a typed nil
	}
	return st, nil
}

// open is Open; poll has the key cache read the counter of key changes
// whatever the URL gives (for the tests of keyPoll on a direct URL).
func open(ctx context.Context, url string, opts Options, poll bool) (*sqlstore.Store, error) {
	url, err := withConnectTimeout(url)
	if err != nil {
		return nil, err
	}
	schemaURL := url
	if opts.DirectURL != "" {
		if schemaURL, err = withConnectTimeout(opts.DirectURL); err != nil {
			return nil, err
		}
	}
	cfg, err := connConfig(url)
	if err != nil {
		return nil, err
	}
	learnTimelines(ctx, &cfg.Config)
	if opts.KeepSchema {
		err = CheckCurrent(ctx, schemaURL)
	} else {
		err = Migrate(ctx, schemaURL)
	}
	if err != nil {
		return nil, err
	}
	own, err := ownsSession(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if own {
		nameStatements(url, cfg)
	}
	db := poolOf(cfg)
	db.SetMaxOpenConns(PoolSize())
	db.SetMaxIdleConns(PoolSize())
	st := sqlstore.New(Dialect, db, db, isUniqueViolation)
	var replicas *replicaSet
	if len(opts.Replicas) > 0 {
		if replicas, err = openReplicas(ctx, db, opts.Replicas, opts.routeEveryRead); err != nil {
			st.Close()
			return nil, err
		}
		st.RouteReads(replicas)
	}
	switch {
	case poll:
		st.CacheKeys(newKeyPoll(db, st, replicas))
	case opts.DirectURL != "":
		st.CacheKeys(newKeyWatch(schemaURL, st, replicas))
	case own:
		// No pooler in between: the URL itself gives a session to listen
		// on. A sync is then an empty query on that session, where polling
		// is a statement through the pool, and a change drops one key, not
		// the whole cache.
		st.CacheKeys(newKeyWatch(url, st, replicas))
	default:
		st.CacheKeys(newKeyPoll(db, st, replicas))
	}
	if err := st.UseSecretsKeys(ctx, opts.Secrets); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// openDB is a pool of connections to url as connConfig makes them.
func openDB(url string) (*sql.DB, error) {
	cfg, err := connConfig(url)
	if err != nil {
		return nil, err
	}
	return poolOf(cfg), nil
}

// poolOf is a pool of connections made with cfg, the host that answered
// last tried first (preferLast), whose statements that commit are
// confirmed (confirmingConn).
func poolOf(cfg *pgx.ConnConfig) *sql.DB {
	connector := stdlib.GetConnector(*cfg, stdlib.OptionBeforeConnect(func(_ context.Context, c *pgx.ConnConfig) error {
		preferLast(&c.Config)
		return nil
	}))
	return sql.OpenDB(confirmingConnector{connector})
}

// connConfig is the configuration of the connections to url.
//
// Statements are described once per connection and run unnamed
// (QueryExecModeCacheDescribe), unless the URL chooses another
// default_query_exec_mode, or Open finds a session of its own
// (nameStatements): a statement prepared by name lives on one
// server session, which a transaction-mode pooler hands to another client
// at the end of the transaction. A request's deadline cancels its statement
// on the server (a cancel request, which PgBouncer passes on), so that a
// request that gave up leaves no work running, or lock waiting, there
// (cancelOnDeadline): what statement_timeout and lock_timeout did when
// they were sent at connection, which a pooler refuses. A commit's notice
// that its wait for the synchronous standbys was cancelled is kept for the
// statement that drew it (noticeSyncCancel, confirmingConn), and a
// connection that met a read-only transaction (25006: a primary demoted
// under it in a failover, or a standby the URL names) is closed, so that
// the pool opens another rather than fail on it again (pgx closes one on a
// FATAL error only). Every connection is checked as it is made
// (watchServers): no old primary on an older timeline, and the host that
// answered last first next time.
func connConfig(url string) (*pgx.ConnConfig, error) {
	cfg, err := pooledConnConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.OnNotice = noticeSyncCancel
	onError := cfg.OnPgError
	cfg.OnPgError = func(c *pgconn.PgConn, e *pgconn.PgError) bool {
		if e.Code == readOnlyTransaction {
			return false // closes the connection
		}
		return onError == nil || onError(c, e)
	}
	watchServers(&cfg.Config, false)
	return cfg, nil
}

// nameStatements has the pool prepare its statements by name
// (QueryExecModeCacheStatement: each planned once per connection), for a
// url whose connections are each a session of their own on the server,
// unless the URL chooses a default_query_exec_mode. Described and run
// unnamed, every statement is planned anew at each run, which costs Get
// Person a large share of its throughput. Behind a pooler the statements
// stay unnamed.
func nameStatements(url string, cfg *pgx.ConnConfig) {
	if _, q, err := parseURL(url); err == nil && !q.Has("default_query_exec_mode") {
		cfg.DefaultQueryExecMode = pgx.QueryExecModeCacheStatement
	}
}

// ownsSession reports whether a connection made with cfg is a session of
// its own on the server: whether the backend that answers its statements
// is the one named by the key it was given at connection (the process id
// of its cancel key). A pooler hands out keys of its own, and its
// connections' statements run on backends of its choosing.
func ownsSession(ctx context.Context, cfg *pgx.ConnConfig) (bool, error) {
	cfg = cfg.Copy()
	preferLast(&cfg.Config)
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return false, err
	}
	defer conn.Close(context.Background())
	var backend uint32
	if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`, pgx.QueryExecModeSimpleProtocol).Scan(&backend); err != nil {
		return false, err
	}
	return backend == conn.PgConn().PID(), nil
}

// PoolSize is the most connections an instance opens for its queries:
// four per CPU it runs on, at least eight. Every connection is a server
// process, and past a few per core they only take turns on the same
// cores: Get Person served fewer requests the more connections the pool
// had beyond that, and concurrent upserts gained nothing from more. The
// pool keeps them all open when idle: a new connection costs the server a
// process.
func PoolSize() int { return max(8, 4*runtime.GOMAXPROCS(0)) }

// Migrate applies the migrations to the database at url.
func Migrate(ctx context.Context, url string) error {
	db, err := openDB(url)
	if err != nil {
		return err
	}
	defer db.Close()
	return migrate(ctx, db)
}

// migrate holds a lock while migrating, so instances that start together
// apply each migration once: goose's table lock, a row of pds_migration_lock
// in the schema with a lease its holder renews, taken and released by
// statements each a transaction of its own, which a transaction-mode pooler
// passes through (a session's advisory lock would be taken on one server
// session and released on another). The table is the schema's, so
// deployments or tests in other schemas of the same database do not wait
// for each other. A waiting instance tries again every second for up to 5
// minutes; one that dies holding the lock leaves it to the others once its
// 30 s lease runs out.
func migrate(ctx context.Context, db *sql.DB) error {
	locker, err := lock.NewPostgresTableLocker(lock.WithTableName(migrationLockTable),
		lock.WithTableLockTimeout(time.Second, 300), lock.WithTableUnlockTimeout(time.Second, 60))
	if err != nil {
		return err
	}
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, sub, goose.WithLocker(locker), goose.WithAllowOutofOrder(true),
		goose.WithGoMigrations(goMigrations()...))
	if err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate postgres: %w", err)
	}
	return nil
}

// goMigrations are the migrations written in Go, beside migrations/*.sql.
func goMigrations() []*goose.Migration {
	return []*goose.Migration{sqlstore.NormalIdentifiersMigration(func(column string) string {
		return column + ` ~ '[^ -~]'`
	})}
}

// migrationLockTable holds the migrations' lock row (goose's table lock).
const migrationLockTable = "pds_migration_lock"

func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// pooledConnConfig is what every connection pds makes needs, a primary's
// and a replica's alike: statements described rather than named (either
// may be behind a transaction-mode pooler, unless the URL chooses), and a
// deadline that cancels the statement on the server.
func pooledConnConfig(url string) (*pgx.ConnConfig, error) {
	_, q, err := parseURL(url)
	if err != nil {
		return nil, err
	}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	if !q.Has("default_query_exec_mode") {
		cfg.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
	}
	cfg.BuildContextWatcherHandler = newCancelOnDeadline
	return cfg, nil
}
