package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/pressly/goose/v3"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/secrets"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/store/sqlstore"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Options tune how Open treats the file.
type Options struct {
	// KeepSchema has Open leave the file as it finds it: instead of
	// migrating, it refuses a file that lacks a migration of this binary
	// with a *schema.BehindError naming them, and a file that does not
	// exist, rather than create one (pds serve --migrate=false).
	KeepSchema bool
	// Log takes what the store says of the faults it mends; nil discards.
	Log *slog.Logger
	// Secrets, when set, seals the secrets the database holds under the
	// operator's key (--secrets-key-file); nil keeps them in clear. Either
	// way Open refuses a database whose secrets are sealed under a key it
	// lacks.
	Secrets *secrets.Keyring
}

// Open opens (creating if needed) the SQLite file at path and applies the
// migrations.
func Open(ctx context.Context, path string) (store.Store, error) {
	return OpenWith(ctx, path, Options{})
}

// OpenWith is Open with options.
func OpenWith(ctx context.Context, path string, opts Options) (store.Store, error) {
	var err error
	if opts.KeepSchema {
		err = CheckCurrent(ctx, path)
	} else {
		err = Migrate(ctx, path)
	}
	if err != nil {
		return nil, err
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	conns, err := newConnections(log)
	if err != nil {
		return nil, err
	}
	// The writer does not sleep in SQLite's busy wait: the group committer
	// polls for the write lock itself (sqlstore's committer.begin). One
	// writer: SQLite allows one write transaction at a time anyway, and a
	// single connection turns contention into queueing instead of
	// SQLITE_BUSY.
	w := conns.pool(dsn(path, false, 0), 1, 1)
	// One more than the readers: the change counter holds one (keysync.go).
	n := max(4, runtime.NumCPU()) + 1
	r := conns.pool(dsn(path, true, busyTimeout), n, n)
	d := Dialect
	d.Unavailable = func(err error) domain.Cause {
		if walIndexCutShort(err) {
			conns.reset()
		}
		return unavailable(err)
	}
	st := sqlstore.New(d, r, w, isUniqueViolation)
	keys, err := newChangeCounter(ctx, st, r, path)
	if err != nil {
		st.Close()
		return nil, err
	}
	conns.holding(keys.letGo)
	st.CacheKeys(keys)
	st.CachePersons(keys)
	st.CloseAfter(keys.wal)
	// The checkpointer checkpoints on a connection of its own.
	ckpt := startCheckpointer(conns.pool(dsn(path, false, busyTimeout), 1, 1), keys.wal, st.BetweenWrites, conns.reset)
	st.CloseWith(ckpt)
	if err := st.UseSecretsKeys(ctx, opts.Secrets); err != nil {
		st.Close()
		return nil, err
	}
	// An erasure a crash interrupted between its chunks is finished before
	// anything is served: its person ends erased, never half.
	if err := st.FinishErasures(ctx, time.Now().UTC()); err != nil {
		st.Close()
		return nil, fmt.Errorf("finish interrupted erasures: %w", err)
	}
	return st, nil
}

// Migrate applies the migrations to the file at path, creating it (and
// its directory) for its owner alone when it is not there yet.
func Migrate(ctx context.Context, path string) error {
	if err := createPrivate(path); err != nil {
		return fmt.Errorf("database %q: %w", path, err)
	}
	db, err := sql.Open("sqlite", dsn(path, false, busyTimeout))
	if err != nil {
		return err
	}
	defer db.Close()
	return migrate(ctx, db)
}

func migrate(ctx context.Context, db *sql.DB) error {
	p, err := goose.NewProvider(goose.DialectSQLite3, db, mustSub(migrations, "migrations"), goose.WithAllowOutofOrder(true),
		goose.WithGoMigrations(goMigrations()...))
	if err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate sqlite: %w", err)
	}
	return nil
}

// goMigrations are the migrations written in Go, beside migrations/*.sql.
func goMigrations() []*goose.Migration {
	return []*goose.Migration{sqlstore.NormalIdentifiersMigration(func(column string) string {
		return column + ` GLOB '*[^ -~]*'`
	})}
}

// busyTimeout is how long, in milliseconds, a connection other than the
// writer waits for a lock another connection or process holds.
const busyTimeout = 10000

// dsn is the data source of a connection to path that waits busyMS
// milliseconds for a lock held elsewhere.
func dsn(path string, readOnly bool, busyMS int) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.Itoa(busyMS)+")")
	q.Add("_pragma", "journal_mode(WAL)")
	// NORMAL is durable in WAL mode except for the last transactions on power
	// loss; FULL keeps every acknowledged write across a power cut too.
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "foreign_keys(ON)")
	// Deleted content is overwritten with zeros, so that an erased
	// person's bytes are gone from the file, and from the WAL once it is
	// checkpointed. ON rather than FAST: FAST zeroes what a delete frees
	// within a page but leaves the pages it frees whole (and those a
	// B-tree rebalance frees, with copies of live rows) as they were on the
	// freelist, where TestErasureLeavesNothingBehind finds a person's
	// breadcrumbs. The price is a write of each page freed whole.
	q.Add("_pragma", "secure_delete(ON)")
	// A statement that writes many rows (an import's multi-row INSERTs)
	// keeps the pages it changes in a statement journal, to undo itself if
	// it fails; past 64 KiB SQLite moves that journal to a temporary file,
	// whose writes cost an import a large share of its time.
	q.Add("_pragma", "temp_store(MEMORY)")
	if readOnly {
		q.Add("_pragma", "query_only(ON)")
	} else {
		q.Set("_txlock", "immediate")
		// The checkpointer copies the WAL into the file (checkpoint.go),
		// and a WAL that starts over is cut back to walSizeLimit.
		q.Add("_pragma", "wal_autocheckpoint(0)")
		q.Add("_pragma", "journal_size_limit("+strconv.Itoa(walSizeLimit)+")")
	}
	return "file:" + path + "?" + q.Encode()
}

func isUniqueViolation(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		code := se.Code()
		return code == sqlite3.SQLITE_CONSTRAINT_UNIQUE || code == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	}
	return false
}

// MigrationCount is how many migrations this binary carries: what a new
// file lacks.
func MigrationCount() int {
	entries, _ := migrations.ReadDir("migrations")
	n := 0
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".sql") {
			n++
		}
	}
	return n
}
