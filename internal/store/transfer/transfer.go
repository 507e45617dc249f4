package transfer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/pds-dev/pds/internal/secrets"
	"github.com/pds-dev/pds/internal/store/engines"
	"github.com/pds-dev/pds/internal/store/postgres"
	"github.com/pds-dev/pds/internal/store/schema"
	"github.com/pds-dev/pds/internal/store/sqlite"
)

// Options say what to transfer where.
type Options struct {
	// From and To are each an SQLite file path or a postgres:// URL.
	From, To string
	// Secrets, when set, is the key file the target will be served with:
	// the transfer copies sealed secrets as they are (each is sealed for
	// its subscription or account, which keep their ids), and opens the
	// target with it only to finish an erasure the source had under way.
	Secrets *secrets.Keyring
	// Progress, when set, is told how many rows of the total are copied,
	// after each batch.
	Progress func(done, total int64)
	// Batch is how many rows go in one statement of the target (COPY on
	// PostgreSQL, a few multi-row INSERTs on SQLite); 0 for 5,000.
	Batch int
}

// Report says what a transfer did, table by table.
type Report struct {
	From, To string
	Tables   []TableReport
	// Rows is how many rows were copied (and renumbered) in all.
	Rows int64
	// Copy is the time from the snapshot to the commit; Finish what
	// followed (statistics, the derived tables' fold).
	Copy, Finish time.Duration
}

// TableReport is one table's part.
type TableReport struct {
	Table  string `json:"table"`
	Action string `json:"action"`
	// Source is how many rows the source's snapshot holds; Target how many
	// the target held at the commit (for what is copied, the same: checked).
	Source int64  `json:"source_rows"`
	Target int64  `json:"target_rows"`
	Note   string `json:"note,omitempty"`
}

// NotEmptyError refuses a target that holds data already: a transfer
// writes into an empty database only, and has changed nothing.
type NotEmptyError struct {
	// Target is the target's engine: "sqlite" or "postgres".
	Target string
	Table  string
}

func (e *NotEmptyError) Error() string {
	what := "rows in " + e.Table
	if e.Table == "accounts" {
		what = "an account (a pds serve started on it makes one)"
	}
	where := "SQLite file"
	if e.Target == "postgres" {
		where = "PostgreSQL database"
	}
	return fmt.Sprintf("the target %s holds %s: pds transfer writes only into an empty database, and changed nothing; "+
		"give a new SQLite file or an empty PostgreSQL database (or schema)", where, what)
}

// ErrSameDatabase refuses a transfer from a database to itself.
var ErrSameDatabase = errors.New("--from and --to name the same database")

// IsPostgres says whether a database names PostgreSQL rather than an
// SQLite file.
func IsPostgres(database string) bool { return engines.IsPostgres(database) }

func engineOf(database string) string { return engines.Name(database) }

// Run transfers the instance at o.From into the empty database at o.To:
// it refuses a target that holds an account before changing anything,
// migrates the target, then copies in one transaction of the target
// everything one snapshot of the source holds, checks every table's count
// and commits; then it brings the target's planner statistics and derived
// tables up to date. A failure before the commit leaves the target
// migrated and empty.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Batch <= 0 {
		o.Batch = 5000
	}
	if same(o.From, o.To) {
		return nil, ErrSameDatabase
	}
	// Nothing is changed, not even a migration, on a target that holds
	// data; the transaction checks again under its lock.
	if err := refuseFilled(ctx, o.To); err != nil {
		return nil, err
	}
	if err := current(ctx, o.From); err != nil {
		return nil, err
	}
	if err := migrate(ctx, o.To); err != nil {
		return nil, fmt.Errorf("migrate the target: %w", err)
	}
	began := time.Now()
	src, err := open(ctx, o.From, false)
	if err != nil {
		return nil, fmt.Errorf("open the source: %w", err)
	}
	defer src.close()
	dst, err := open(ctx, o.To, true)
	if err != nil {
		return nil, fmt.Errorf("open the target: %w", err)
	}
	dstT := dst.(target)
	defer dstT.close()

	rep := &Report{From: engineOf(o.From), To: engineOf(o.To)}
	c := &copier{o: o, src: src, dst: dstT, rep: rep, target: o.To}
	if err := c.run(ctx); err != nil {
		return nil, err
	}
	rep.Copy = time.Since(began)
	// Both sides' connections go before the target is opened again as pds
	// serve opens it: their caches held through finish would add to what
	// the store's own take (close is safe to call again).
	src.close()
	finished := time.Now()
	if err := finish(ctx, o, dstT, c.written); err != nil {
		return rep, fmt.Errorf("the transfer is committed, but bringing the target's derived tables up to date failed "+
			"(pds serve on the target does it in the background): %w", err)
	}
	rep.Finish = time.Since(finished)
	if err := recount(ctx, o.To, rep); err != nil {
		return rep, fmt.Errorf("the transfer is committed, but counting the target's derived tables failed: %w", err)
	}
	return rep, nil
}

// recount counts again, once finish has folded them, the tables the
// transfer did not copy.
func recount(ctx context.Context, to string, rep *Report) error {
	s, err := open(ctx, to, false)
	if err != nil {
		return err
	}
	defer s.close()
	for i := range rep.Tables {
		r := &rep.Tables[i]
		if r.Action != string(rebuilt) && r.Action != string(notCarried) {
			continue
		}
		tables, err := s.tables(ctx)
		if err != nil {
			return err
		}
		if slices.Contains(tables, r.Table) {
			if r.Target, err = count(ctx, s, r.Table); err != nil {
				return err
			}
		}
	}
	return nil
}

// same says whether from and to name one database: the same file, or the
// same URL.
func same(from, to string) bool {
	if IsPostgres(from) != IsPostgres(to) {
		return false
	}
	if IsPostgres(from) {
		return from == to
	}
	a, errA := filepath.Abs(from)
	b, errB := filepath.Abs(to)
	if errA != nil || errB != nil {
		return from == to
	}
	if ra, err := filepath.EvalSymlinks(a); err == nil {
		a = ra
	}
	if rb, err := filepath.EvalSymlinks(b); err == nil {
		b = rb
	}
	return a == b
}

func open(ctx context.Context, database string, write bool) (side, error) {
	if IsPostgres(database) {
		return openPostgres(ctx, database, write)
	}
	return openSQLite(ctx, database, write)
}

// current refuses a source that lacks a migration of this binary: its
// tables would not be those the target is migrated to.
func current(ctx context.Context, from string) error {
	var err error
	if IsPostgres(from) {
		err = postgres.CheckCurrent(ctx, from)
	} else {
		if _, serr := os.Stat(from); errors.Is(serr, fs.ErrNotExist) {
			return fmt.Errorf("there is no SQLite database at %s to copy", from)
		}
		err = sqlite.CheckCurrent(ctx, from)
	}
	var behind *schema.BehindError
	if errors.As(err, &behind) {
		return fmt.Errorf("the source: %w; run pds migrate --database on it first, with this binary", err)
	}
	if err != nil {
		return fmt.Errorf("the source: %w", err)
	}
	return nil
}

func migrate(ctx context.Context, to string) error {
	if IsPostgres(to) {
		return postgres.Migrate(ctx, to)
	}
	return sqlite.Migrate(ctx, to)
}

// refuseFilled refuses a target whose accounts table (if it has one yet)
// holds a row, reading only: an SQLite file not there yet is empty.
func refuseFilled(ctx context.Context, to string) error {
	if !IsPostgres(to) {
		if _, err := os.Stat(to); err != nil {
			return nil
		}
	}
	s, err := open(ctx, to, false)
	if err != nil {
		return fmt.Errorf("open the target: %w", err)
	}
	defer s.close()
	tables, err := s.tables(ctx)
	if err != nil {
		return fmt.Errorf("read the target: %w", err)
	}
	if !slices.Contains(tables, "accounts") {
		return nil
	}
	filled, err := holdsRows(ctx, s, "accounts")
	if err != nil {
		return fmt.Errorf("read the target: %w", err)
	}
	if filled {
		return &NotEmptyError{Target: engineOf(to), Table: "accounts"}
	}
	return nil
}
