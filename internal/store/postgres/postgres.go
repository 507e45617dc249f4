// Package postgres is the engine for deployments that outgrow one machine:
// any number of instances share one database.
package postgres

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"runtime"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/store/sqlstore"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Options tune the connections of a store that serves requests.
type Options struct {
	// StatementTimeout, when positive, has the server end any statement,
	// or any wait for a lock, that runs longer (statement_timeout and
	// lock_timeout of every session): a request that gave up at its
	// deadline leaves no work running, or lock waiting, on the server. It
	// does not apply to the migrations, which may take long.
	StatementTimeout time.Duration
	// KeepSchema has Open leave the schema as it finds it: instead of
	// migrating, it refuses a database that lacks a migration of this
	// binary with a *schema.BehindError naming them (pds serve
	// --migrate=false, whose deploy runs pds migrate as a step of its own).
	KeepSchema bool
}

// defaultConnectTimeout bounds a connection attempt whose URL sets no
// connect_timeout: a frozen server accepts the TCP connection and never
// answers, and a pool that opens connections in the background would wait
// for it forever.
const defaultConnectTimeout = "5"

// Open connects to the database at url and applies the migrations (or,
// with KeepSchema, checks that none is pending).
func Open(ctx context.Context, url string, opts Options) (store.Store, error) {
	url, err := withDefault(url, "connect_timeout", defaultConnectTimeout)
	if err != nil {
		return nil, err
	}
	if opts.KeepSchema {
		err = CheckCurrent(ctx, url)
	} else {
		err = Migrate(ctx, url)
	}
	if err != nil {
		return nil, err
	}
	if t := opts.StatementTimeout; t > 0 {
		ms := strconv.FormatInt(max(1, t.Milliseconds()), 10)
		if url, err = WithSetting(url, "statement_timeout", ms); err != nil {
			return nil, err
		}
		if url, err = WithSetting(url, "lock_timeout", ms); err != nil {
			return nil, err
		}
	}
	// Rate-limit counts may be lost in a crash, so their pool does not wait
	// for the WAL flush (Store.SetCounterPool).
	counterURL, err := WithSetting(url, "synchronous_commit", "off")
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("pgx", url)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(poolSize())
	db.SetMaxIdleConns(poolSize())
	counter, err := sql.Open("pgx", counterURL)
	if err != nil {
		db.Close()
		return nil, err
	}
	counter.SetMaxOpenConns(4)
	st := sqlstore.New(Dialect, db, db, isUniqueViolation)
	st.SetCounterPool(counter)
	st.CacheKeys(newKeyWatch(url, st))
	return st, nil
}

// poolSize is the most connections an instance opens for its queries:
// four per CPU it runs on, at least eight. Every connection is a server
// process, and past a few per core they only take turns on the same
// cores: on a 2-core machine with the server alongside, Get Person at 64
// client connections served 4.5k req/s with 10 connections, 3.9k with 20,
// 2.8k with 32 and 0.65k with 64, and 32 concurrent upserts were as fast
// with 8 to 20 connections as with more (go test -bench, interleaved runs,
// medians). The pool keeps them all open when idle: a new connection
// costs the server a process.
func poolSize() int { return max(8, 4*runtime.GOMAXPROCS(0)) }

// Migrate applies the migrations to the database at url.
func Migrate(ctx context.Context, url string) error {
	if _, _, err := parseURL(url); err != nil {
		return err
	}
	db, err := sql.Open("pgx", url)
	if err != nil {
		return err
	}
	defer db.Close()
	return migrate(ctx, db)
}

// migrate holds a session advisory lock while migrating, so instances that
// start together apply each migration once.
//
// Advisory locks belong to the whole database, while the migrations (and
// goose's version table) belong to the schema on the search_path. The lock
// is therefore one per schema: deployments or tests in other schemas of the
// same database do not wait for each other's migrations. A waiting instance
// retries every second (goose's default is every five) for up to 5 minutes.
func migrate(ctx context.Context, db *sql.DB) error {
	var schema string
	if err := db.QueryRowContext(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return fmt.Errorf("migrate postgres: %w", err)
	}
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(migrationLockID(schema)), lock.WithLockTimeout(1, 300))
	if err != nil {
		return err
	}
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, sub, goose.WithSessionLocker(locker), goose.WithAllowOutofOrder(true))
	if err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate postgres: %w", err)
	}
	return nil
}

// migrationLockID is the advisory lock key of the migrations of one schema.
func migrationLockID(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("pds migrations " + schema))
	return int64(h.Sum64())
}

func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}
