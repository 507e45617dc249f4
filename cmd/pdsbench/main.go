// Command pdsbench measures the service at scale. For each engine it makes a
// fresh database, seeds persons through "pds import persons" (a third hold
// tag A, a fifth tag B) and breadcrumbs, starts "pds serve" on it as a
// process of its own (the binary built from this checkout, as a user starts
// it, its JSON log to a file), warms it up and measures every row from
// outside, over HTTP, with a closed-loop load generator or wrk, against
// ceilings that each run in a process of their own (ceiling.go). It prints
// one markdown table.
//
//	go run ./cmd/pdsbench --engine both --persons 20000
//	go run ./cmd/pdsbench --engine both --persons 20000 --rows bulk
//
// --rows picks groups of rows: scale (the default) and the groups other
// files add to rowGroups from init (bulk.go).
//
// The figures are for reading, never a timed test; a run fails only when a
// request fails or a total is not the exact count the seed implies.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	_ "net/http/pprof" // served on --pprof only
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/store/engines"
)

type config struct {
	engines      []string
	persons      int
	perPerson    int
	pgURL        string
	duration     time.Duration
	requests     int
	out          string
	pdsBin       string
	cpuProfile   string
	pprofAddr    string
	keepDatabase bool
	reuse        string
	only         map[string]bool // row numbers to measure; nil is every row
	rows         []string
	// peer is the base URL of a PocketBase the operator started, and
	// peerAdmin its superuser's email:password (--rows peer).
	peer, peerAdmin string
	// replica is a streaming standby of pgURL that every PostgreSQL pds
	// serve reads from too (--replica; replica.go).
	replica string
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if len(os.Args) > 1 && os.Args[1] == "ceiling" {
		err = runCeiling(ctx, os.Args[2:])
	} else {
		err = run(ctx, os.Args[1:])
	}
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "pdsbench:", err)
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("pdsbench", flag.ContinueOnError)
	var c config
	engine := fs.String("engine", "sqlite", "sqlite, postgres or both")
	fs.IntVar(&c.persons, "persons", 1_000_000, "persons to seed")
	fs.IntVar(&c.perPerson, "breadcrumbs-per-person", 3, "breadcrumbs to seed per person")
	fs.StringVar(&c.pgURL, "postgres-url", os.Getenv("PDS_TEST_POSTGRES_URL"), "PostgreSQL server; each run makes a schema of its own and drops it")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "length of each sustained row, and the most any latency row runs")
	fs.IntVar(&c.requests, "requests", 1000, "requests of each latency row (sequential, one connection)")
	fs.StringVar(&c.out, "out", "", "also write the table to this file")
	fs.StringVar(&c.pdsBin, "pds", "", "the pds binary measured (pds serve) and run for the seed's pds import persons (default: go build ./cmd/pds into a temporary directory)")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of the measured rows to this file (the load generator) and of each pds serve to this file with .ENGINE-NAME added")
	fs.StringVar(&c.pprofAddr, "pprof", "", "serve net/http/pprof of this program (the load generator) on this address while running (e.g. 127.0.0.1:6060)")
	fs.BoolVar(&c.keepDatabase, "keep", false, "keep the run's directory (the SQLite file, the servers' logs) and the PostgreSQL schema, their names printed, for inspection")
	fs.StringVar(&c.reuse, "reuse", "", "measure again the database a --keep run left, named by the fixture.json it printed (one engine)")
	only := fs.String("only", "", "measure only these rows, by number (e.g. 2,4; 15 is the merge row, which it adds to --rows); the import row comes with a seed")
	fs.StringVar(&c.peer, "peer", "", "base URL of a PocketBase to compare creates and reads with (--rows peer), e.g. http://127.0.0.1:8090")
	fs.StringVar(&c.peerAdmin, "peer-admin", "", "the PocketBase superuser's email:password, with which --rows peer makes its collection")
	fs.StringVar(&c.replica, "replica", "", "a streaming standby of --postgres-url: every PostgreSQL pds serve also gets it as --database-replica "+
		"(with the run's schema), and the reads each target served are printed after its rows; on one machine this shows the routing's overhead, not the scale-out")
	rowsFlag := fs.String("rows", "scale", "comma list of row groups to measure: "+strings.Join(rowGroupNames(), ", "))
	if err := fs.Parse(args); err != nil {
		return err
	}
	var err error
	if c.rows, err = parseRows(*rowsFlag); err != nil {
		return err
	}
	switch *engine {
	case "sqlite", "postgres":
		c.engines = []string{*engine}
	case "both":
		c.engines = []string{"sqlite", "postgres"}
	default:
		return fmt.Errorf("--engine is sqlite, postgres or both, not %q", *engine)
	}
	if *only != "" {
		c.only = map[string]bool{}
		for _, n := range strings.Split(*only, ",") {
			if !slices.Contains([]string{"1", "2", "3", "4", "5", "6", "8", "14", mergeRow}, n) {
				return fmt.Errorf("--only takes row numbers 1-6, 8, 14 and %s, not %q", mergeRow, n)
			}
			c.only[n] = true
		}
		// The merge's row is a group of its own: naming it runs it.
		if c.only[mergeRow] && !slices.Contains(c.rows, mergeGroup) {
			c.rows = append(c.rows, mergeGroup)
		}
	}
	if c.reuse != "" && len(c.engines) != 1 {
		return errors.New("--reuse measures one engine's database: give --engine sqlite or postgres")
	}
	if c.persons < 1 || c.requests < 1 || c.duration <= 0 || c.perPerson < 0 {
		return errors.New("--persons, --requests and --duration must be positive")
	}
	if c.pprofAddr != "" {
		go func() { _ = http.ListenAndServe(c.pprofAddr, nil) }()
	}
	dir, err := os.MkdirTemp("", "pdsbench-")
	if err != nil {
		return err
	}
	if c.keepDatabase {
		fmt.Fprintf(os.Stderr, "pdsbench: the run's directory %s is kept\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	if c.pdsBin == "" {
		c.pdsBin = filepath.Join(dir, "pds")
		build := exec.CommandContext(ctx, "go", "build", "-o", c.pdsBin, "github.com/pds-dev/pds/cmd/pds")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("go build ./cmd/pds: %w", err)
		}
	}
	if c.cpuProfile != "" {
		f, err := os.Create(c.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	var rows []row
	var failures []string
	for _, eng := range c.engines {
		engDir := filepath.Join(dir, eng)
		for _, g := range []struct {
			name string
			on   bool
			run  func(context.Context, config, string, string) ([]row, []string, error)
		}{{"seeded", c.seeded(), bench}, {deliveryGroup, slices.Contains(c.rows, deliveryGroup), benchDelivery},
			{peerGroup, slices.Contains(c.rows, peerGroup), benchPeer}} {
			if !g.on {
				continue
			}
			if err := os.MkdirAll(filepath.Join(engDir, g.name), 0o700); err != nil {
				return err
			}
			r, fails, err := g.run(ctx, c, eng, filepath.Join(engDir, g.name))
			rows = append(rows, r...)
			failures = append(failures, fails...)
			if err != nil {
				return fmt.Errorf("%s: %w", eng, err)
			}
		}
	}
	table := markdown(c, rows)
	fmt.Print(table)
	if c.out != "" {
		if err := os.WriteFile(c.out, []byte(table), 0o644); err != nil {
			return err
		}
	}
	if len(failures) > 0 {
		return fmt.Errorf("%d checks failed:\n%s", len(failures), strings.Join(failures, "\n"))
	}
	return nil
}

// row is one line of the table.
type row struct {
	engine, name string
	n            int
	p50, p99     time.Duration
	throughput   string
	note         string
}

func markdown(c config, rows []row) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\npdsbench: %d persons, %d breadcrumbs per person; latency rows: up to %d sequential requests or %s; sustained rows: %s\n\n",
		c.persons, c.perPerson, c.requests, c.duration, c.duration)
	b.WriteString("| Engine | Row | Requests | p50 | p99 | Throughput | Notes |\n|---|---|---:|---:|---:|---:|---|\n")
	for _, r := range rows {
		lat := func(d time.Duration) string {
			if r.n == 0 {
				return "-"
			}
			return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000)
		}
		n := "-"
		if r.n > 0 {
			n = fmt.Sprint(r.n)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", r.engine, r.name, n, lat(r.p50), lat(r.p99), r.throughput, r.note)
	}
	return b.String()
}

// fixture is what the measured rows need to know of the seeded account.
type fixture struct {
	key        string
	account    string
	tagA, tagB string
	since      time.Time
	// seeded persons were imported (seedExternalID(0) to seeded-1); the
	// account holds persons in all, and breadcrumbs of which flavored have
	// the first flavor.
	seeded, persons       int
	breadcrumbs, flavored int
	samplePerson          []string
}

// progress returns the logger of progress lines on stderr. Each line
// carries the time of day (UTC), so that a row can be lined up with the
// database server's own log: a checkpoint's flush landing on a latency row
// shows in its p99.
func progress(label string) func(format string, a ...any) {
	return func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "pdsbench %s %s: %s\n", label, time.Now().UTC().Format("15:04:05.000"), fmt.Sprintf(format, a...))
	}
}

// bench seeds one engine (or reuses a kept one) and measures its rows.
func bench(ctx context.Context, c config, engine, dir string) ([]row, []string, error) {
	logf := progress(engine)
	var (
		database string
		fx       fixture
		rows     []row
	)
	if c.reuse != "" {
		saved, err := loadFixture(c.reuse)
		if err != nil {
			return nil, nil, err
		}
		database, fx = saved.Database, saved.fixture()
		if err := recount(ctx, engine, database, &fx); err != nil {
			return nil, nil, err
		}
		logf("reusing %s: %d persons, %d breadcrumbs", c.reuse, fx.persons, fx.breadcrumbs)
	} else {
		db, drop, err := freshDatabase(ctx, engine, dir, c.pgURL, c.keepDatabase)
		if err != nil {
			return nil, nil, err
		}
		defer drop()
		database = db
		if fx, rows, err = seed(ctx, c, engine, database, dir, logf); err != nil {
			return nil, nil, err
		}
		if c.keepDatabase {
			path := filepath.Join(dir, "fixture.json")
			if err := saveFixture(path, database, fx); err != nil {
				return nil, nil, err
			}
			fmt.Fprintf(os.Stderr, "pdsbench: --reuse %s measures this database again\n", path)
		}
	}

	srv, err := startPDS(c, "pds-serve", dir, database)
	if err != nil {
		return nil, nil, err
	}
	defer srv.stop()
	m := &measure{ctx: ctx, c: c, engine: engine, fx: fx, base: srv.base, pds: srv, dir: dir, logf: logf, database: database}
	m.rows = rows
	if err := settle(ctx, engine, database, srv, logf); err != nil {
		return nil, nil, err
	}
	if err := srv.profileRows(c, engine, "pds-serve"); err != nil {
		return nil, nil, err
	}
	m.all()
	srv.printReadTargets(logf)
	if err := srv.stop(); err != nil {
		m.fail("%v", err)
	}
	return m.rows, m.failures, nil
}

// seed makes the account, its tags and key, imports the persons, appends
// the breadcrumbs and folds the counts. It leaves the tables the import
// wrote as the import left them, and its own breadcrumbs as a server that
// took them in over time would (see the end).
func seed(ctx context.Context, c config, engine, database, dir string, logf func(string, ...any)) (fixture, []row, error) {
	fx := fixture{persons: c.persons, seeded: c.persons, since: time.Now().UTC().Add(-time.Minute)}
	// The account, its tags and a key, through the store.
	st, err := open(ctx, database)
	if err != nil {
		return fx, nil, err
	}
	now := time.Now().UTC()
	fx.account, fx.key, err = accountWithKey(ctx, st, "pdsbench")
	var tagA, tagB domain.Tag
	if err == nil {
		tagA, _, err = st.CreateTag(ctx, domain.Tag{AccountID: fx.account, Name: "A", Context: "person", DateCreated: domain.T(now)})
	}
	if err == nil {
		tagB, _, err = st.CreateTag(ctx, domain.Tag{AccountID: fx.account, Name: "B", Context: "person", DateCreated: domain.T(now)})
	}
	st.Close()
	if err == nil && engine == "postgres" {
		err = withoutAutovacuum(ctx, database)
	}
	if err != nil {
		return fx, nil, err
	}
	fx.tagA, fx.tagB = tagA.ID, tagB.ID

	// Persons through pds import persons, a subprocess, as a user runs it.
	file := filepath.Join(dir, "persons.jsonl")
	if err := writePersons(file, c.persons, fx.tagA, fx.tagB); err != nil {
		return fx, nil, err
	}
	logf("importing %d persons", c.persons)
	took, analyze, err := importPersons(ctx, c.pdsBin, database, fx.account, file, c.persons)
	if err != nil {
		return fx, nil, err
	}
	os.Remove(file)
	logf("imported in %s, of which %s updating statistics after the commit", took.Round(time.Millisecond), analyze)
	rows := []row{{engine: engine, name: "7. `pds import persons`, wall time", throughput: fmt.Sprintf("%.0f persons/s", float64(c.persons)/took.Seconds()),
		note: fmt.Sprintf("%d lines in %s, of which statistics %s", c.persons, took.Round(time.Millisecond), analyze)}}

	db, err := rawDB(engine, database)
	if err != nil {
		return fx, nil, err
	}
	// The import opened a burst per person, which pds serve's worker
	// closes once due (after the import's window, 5 minutes): with no
	// subscription, by deleting it. Left to the worker, a million closes
	// land on whichever rows run then; delete them as it would have by the
	// time anyone measured.
	t0 := time.Now()
	if _, err := db.ExecContext(ctx, `DELETE FROM bursts WHERE account_id = $1`, fx.account); err != nil {
		db.Close()
		return fx, nil, fmt.Errorf("closing the import's bursts: %w", err)
	}
	logf("the import's bursts closed in %s", time.Since(t0).Round(time.Millisecond))

	// Breadcrumbs in bulk.
	logf("seeding %d breadcrumbs per person", c.perPerson)
	t0 = time.Now()
	fx.breadcrumbs, err = seedBreadcrumbs(ctx, db, engine, fx.account, c.perPerson, time.Now().UTC())
	if err == nil {
		err = samplePersons(ctx, db, &fx)
	}
	db.Close()
	if err != nil {
		return fx, nil, fmt.Errorf("seeding breadcrumbs: %w", err)
	}
	fx.flavored = c.persons * ((c.perPerson + len(breadcrumbFlavors) - 1) / len(breadcrumbFlavors))
	logf("%d breadcrumbs in %s", fx.breadcrumbs, time.Since(t0).Round(time.Millisecond))

	// The raw INSERTs left their counts as deltas; fold them as the server
	// would in the background, before measuring.
	st, err = open(ctx, database)
	if err != nil {
		return fx, nil, err
	}
	t0 = time.Now()
	err = foldTimelines(ctx, st)
	st.Close()
	if err != nil {
		return fx, nil, err
	}
	logf("counts folded in %s", time.Since(t0).Round(time.Millisecond))
	// The rows measure what a user gets right after pds import persons: the
	// tables it wrote (persons, their links and tag bits) keep the
	// statistics it left, and with autovacuum off (withoutAutovacuum)
	// nothing else refreshes them. The breadcrumbs are this seed's own,
	// written by INSERTs the product never sends; they stand for a history
	// that arrived over weeks, which autovacuum would have vacuumed and
	// analyzed as it grew. So are their timeline deltas (three million
	// written by their triggers and deleted by the fold) and the buckets the
	// fold moved them into, nearly all of timeline_counts, and the import's
	// outbox rows, all closed above: vacuum and analyze those four tables,
	// as autovacuum would have, and no other.
	if engine == "postgres" {
		db, err := rawDB(engine, database)
		if err != nil {
			return fx, nil, err
		}
		defer db.Close()
		if _, err := db.ExecContext(ctx, `VACUUM ANALYZE breadcrumbs, timeline_deltas, timeline_counts, bursts`); err != nil {
			return fx, nil, err
		}
	}
	return fx, rows, nil
}

func open(ctx context.Context, database string) (store.Store, error) {
	return engines.Open(ctx, database, engines.Options{})
}
