package main

import (
	"bufio"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver, for the schema and the bulk seed
	_ "modernc.org/sqlite"             // the "sqlite" driver, for the bulk seed

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/store/postgres"
)

// freshDatabase makes an empty database of the engine and returns what
// --database takes, and what drops it.
func freshDatabase(ctx context.Context, engine, dir, pgURL string, keep bool) (string, func(), error) {
	if engine == "sqlite" {
		return filepath.Join(dir, "pds.db"), func() {}, nil
	}
	if pgURL == "" {
		return "", nil, fmt.Errorf("--engine postgres needs --postgres-url (or PDS_TEST_POSTGRES_URL)")
	}
	admin, err := sql.Open("pgx", pgURL)
	if err != nil {
		return "", nil, err
	}
	schema := "pdsbench_" + domain.RandomHex(6)
	if _, err := admin.ExecContext(ctx, `CREATE SCHEMA `+schema); err != nil {
		admin.Close()
		return "", nil, fmt.Errorf("create schema: %w", err)
	}
	drop := func() {
		if keep {
			fmt.Fprintf(os.Stderr, "pdsbench: kept PostgreSQL schema %s\n", schema)
		} else {
			_, _ = admin.ExecContext(context.Background(), `DROP SCHEMA `+schema+` CASCADE`)
		}
		admin.Close()
	}
	u, err := postgres.WithSetting(pgURL, "search_path", schema)
	if err != nil {
		drop()
		return "", nil, err
	}
	return u, drop, nil
}

// rawDB opens the database without the store, for what no store method
// does: the bulk breadcrumb seed and ANALYZE.
func rawDB(engine, database string) (*sql.DB, error) {
	if engine == "postgres" {
		return sql.Open("pgx", database)
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "foreign_keys(ON)")
	q.Add("_pragma", "temp_store(MEMORY)")
	// The seed writes breadcrumbs at random places of six indexes: with
	// SQLite's default 2 MB of cache it spends its time reading pages back.
	q.Add("_pragma", "cache_size(-262144)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+database+"?"+q.Encode())
	if err == nil {
		db.SetMaxOpenConns(1)
	}
	return db, err
}

// withoutAutovacuum turns autovacuum off for every table of a fresh
// PostgreSQL schema, whatever the server's setting, so that the rows
// measure the tables as the seed left them rather than as far as autovacuum
// has caught up by the time each runs.
func withoutAutovacuum(ctx context.Context, database string) error {
	db, err := rawDB("postgres", database)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, `DO $$ DECLARE t text; BEGIN
		FOR t IN SELECT quote_ident(tablename) FROM pg_tables WHERE schemaname = current_schema() LOOP
			EXECUTE 'ALTER TABLE ' || t || ' SET (autovacuum_enabled = off)';
		END LOOP; END $$`)
	return err
}

// accountWithKey makes an account and a key of every scope whose own rate
// limit (a key's --rate-limit) no row reaches, so that pds serve's default
// limit per key stays out of what the rows measure.
func accountWithKey(ctx context.Context, st store.Store, name string) (account, key string, err error) {
	now := time.Now().UTC()
	account = domain.NewID("acc")
	if err := st.CreateAccount(ctx, domain.Account{ID: account, Name: name, CreatedAt: now}); err != nil {
		return "", "", err
	}
	unlimited := 1 << 30
	_, key, err = service.MintKey(ctx, st, service.KeyRequest{AccountID: account, Scopes: domain.AllScopes, RateLimit: &unlimited}, now)
	return account, key, err
}

// foldTimelines folds the timeline deltas raw INSERTs left into their
// counts, as the server would in the background.
func foldTimelines(ctx context.Context, st store.Store) error {
	if f, ok := st.(interface{ FoldTimelines(context.Context) error }); ok {
		return f.FoldTimelines(ctx)
	}
	return nil
}

// Person i of the seed: identifiers the rows can name without a lookup.
func seedExternalID(i int) string { return "ext-" + strconv.Itoa(i) }
func seedEmail(i int) string      { return "p" + strconv.Itoa(i) + "@bench.example" }

// holdsA and holdsB: a third of the persons hold tag A, a fifth tag B.
func holdsA(i int) bool { return i%3 == 0 }
func holdsB(i int) bool { return i%5 == 0 }

// writePersons writes the import file: n Upsert Person lines with tag_ids.
func writePersons(path string, n int, tagA, tagB string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for i := range n {
		var tags []string
		if holdsA(i) {
			tags = append(tags, strconv.Quote(tagA))
		}
		if holdsB(i) {
			tags = append(tags, strconv.Quote(tagB))
		}
		fmt.Fprintf(w, `{"external_id":%q,"email":%q,"first_name":"First %d","last_name":"Last","phone":"+1555%07d","tag_ids":[%s]}`+"\n",
			seedExternalID(i), seedEmail(i), i, i, strings.Join(tags, ","))
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// importPersons runs "pds import persons" (with the flags in extra too)
// and returns its wall time, and the part of it the import spent on the
// planner's statistics after its commit (as it reports it; a pds that does
// not reports none).
func importPersons(ctx context.Context, pdsBin, database, account, file string, n int, extra ...string) (took, analyze time.Duration, err error) {
	args := append([]string{"import", "persons", "--account", account, "--database", database, "--json"}, extra...)
	cmd := exec.CommandContext(ctx, pdsBin, append(args, file)...)
	cmd.Stderr = os.Stderr
	t0 := time.Now()
	out, err := cmd.Output()
	took = time.Since(t0)
	if err != nil {
		return 0, 0, fmt.Errorf("pds import persons: %w", err)
	}
	var res struct {
		Created   int
		AnalyzeMs int64 `json:"analyze_ms"`
	}
	if err := json.Unmarshal(out, &res); err != nil || res.Created != n {
		return 0, 0, fmt.Errorf("pds import persons printed %q, want %d created", out, n)
	}
	return took, time.Duration(res.AnalyzeMs) * time.Millisecond, nil
}

// breadcrumbFlavors are the flavors the seed gives each person's
// breadcrumbs, in turn.
var breadcrumbFlavors = []string{"page_view", "email_view", "form_submission"}

// seedBreadcrumbs appends perPerson breadcrumbs to every person of the
// account, in one transaction of multi-row INSERTs writing the rows Append
// Breadcrumb writes for a person given by external_id, with activity times
// spread over the last 29 days. (It does not move the persons' last seen
// time, which Append Breadcrumb would.) It returns how many it wrote.
func seedBreadcrumbs(ctx context.Context, db *sql.DB, engine, account string, perPerson int, now time.Time) (int, error) {
	if perPerson <= 0 {
		return 0, nil
	}
	type person struct{ id, ext string }
	var persons []person
	rows, err := db.QueryContext(ctx, `SELECT id, external_id FROM persons WHERE account_id = $1 ORDER BY id`, account)
	if err != nil {
		return 0, err
	}
	for rows.Next() {
		var p person
		var ext sql.NullString
		if err := rows.Scan(&p.id, &ext); err != nil {
			rows.Close()
			return 0, err
		}
		p.ext = ext.String
		persons = append(persons, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}

	// SQLite binds each parameter by a walk of the list of names, so its
	// statements stay short; PostgreSQL pays a round trip per statement.
	batch := 50
	if engine == "postgres" {
		batch = 1000
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it does nothing
	const own = 5       // id, flavor, person_id, external_id, activity (occurred_at = activity_at)
	stmts := map[int]*sql.Stmt{}
	insert := func(args []any) error {
		n := (len(args) - 2) / own
		st := stmts[n]
		if st == nil {
			var b strings.Builder
			b.WriteString(`INSERT INTO breadcrumbs (id, account_id, flavor, person_id, external_id, occurred_at, activity_at, created_at) VALUES `)
			for r := range n {
				if r > 0 {
					b.WriteString(", ")
				}
				k := 3 + r*own
				fmt.Fprintf(&b, "($%d, $1, $%d, $%d, $%d, $%d, $%d, $2)", k, k+1, k+2, k+3, k+4, k+4)
			}
			if st, err = tx.PrepareContext(ctx, b.String()); err != nil {
				return err
			}
			stmts[n] = st
		}
		_, err := st.ExecContext(ctx, args...)
		return err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	span := (29 * 24 * time.Hour).Milliseconds()
	created := now.UnixMilli()
	type crumb struct {
		person   int
		flavor   int
		activity int64
	}
	crumbs := make([]crumb, 0, len(persons)*perPerson)
	for i := range persons {
		for j := range perPerson {
			crumbs = append(crumbs, crumb{i, j % len(breadcrumbFlavors), created - rng.Int64N(span)})
		}
	}
	// In activity order, the time-ordered indexes (and the timeline deltas
	// the triggers record) grow at their ends instead of everywhere at once.
	slices.SortFunc(crumbs, func(a, b crumb) int { return cmp.Compare(a.activity, b.activity) })
	args := []any{account, created}
	written := 0
	for _, c := range crumbs {
		p := persons[c.person]
		args = append(args, domain.NewID(domain.BreadcrumbIDPrefix), breadcrumbFlavors[c.flavor], p.id, p.ext, c.activity)
		written++
		if (len(args)-2)/own == batch {
			if err := insert(args); err != nil {
				return 0, err
			}
			args = args[:2]
		}
	}
	if len(args) > 2 {
		if err := insert(args); err != nil {
			return 0, err
		}
	}
	return written, tx.Commit()
}

// samplePersons picks the ids Get Person asks for: up to 1,000 persons
// spread evenly over the seed.
func samplePersons(ctx context.Context, db *sql.DB, fx *fixture) error {
	step := max(1, fx.seeded/1000)
	var exts []any
	for i := 0; i < fx.seeded; i += step {
		exts = append(exts, seedExternalID(i))
	}
	for len(exts) > 0 {
		batch := exts[:min(len(exts), 100)]
		exts = exts[len(batch):]
		marks := make([]string, len(batch))
		for i := range batch {
			marks[i] = "$" + strconv.Itoa(i+2)
		}
		rows, err := db.QueryContext(ctx, `SELECT id FROM persons WHERE account_id = $1 AND external_id IN (`+strings.Join(marks, ", ")+`)`,
			append([]any{fx.account}, batch...)...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			fx.samplePerson = append(fx.samplePerson, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	if len(fx.samplePerson) == 0 {
		return fmt.Errorf("no persons found to sample")
	}
	return nil
}
