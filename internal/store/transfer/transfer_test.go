package transfer_test

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/httpapi/apitest"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/store/transfer"
	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/internal/webhook/webhooktest"
)

// fill writes two accounts' worth of everything through the API, then
// gives the columns the API leaves empty (the delivery log, leases,
// campaigns and projects) values of their own through SQL, so that every
// column of every table copied holds something to carry.
func fill(t *testing.T, env *apitest.Env, rc *webhooktest.Receiver, raw *sql.DB) (accounts []string) {
	t.Helper()
	for i := range 2 {
		acc := env.NewAccount()
		accounts = append(accounts, acc)
		key := env.Key(acc)
		hook := env.Post(key, "/webhooks", map[string]any{"name": "crm", "target_url": rc.URL,
			"events": []string{"person.created", "person.updated", "person.deleted"}, "signature_scheme": "standard-webhooks",
			"headers": map[string]string{"Authorization": "Bearer 0123456789abcdef"}, "max_per_second": 50, "include_changes": true}).Want(201).Map()
		env.Post(key, "/webhooks/"+hook["id"].(string)+"/rotate-secret", nil).Want(200)
		var tags []string
		for _, name := range []string{"newsletter", "vip", "old"} {
			tags = append(tags, env.Post(key, "/tags", map[string]any{"name": name, "context": "person"}).Want(201).Map()["id"].(string))
		}
		env.Delete(key, "/tags/"+tags[2]).Want(204)
		env.Post(key, "/custom-fields", map[string]any{"collection": "Person", "data_type": "str", "key": "plan",
			"label": "Plan", "description": "what they pay for"}).Want(201)
		env.Post(key, "/custom-fields", map[string]any{"collection": "Person", "data_type": "int", "key": "score"}).Want(201)
		var persons []string
		for j := range 6 {
			env.Clock.Advance(time.Second)
			p := env.Post(key, "/persons", map[string]any{"external_id": fmt.Sprintf("crm-%d-%d", i, j),
				"email": fmt.Sprintf("p%d@a%d.test", j, i), "first_name": "Ädä", "last_name": "L", "phone": "+44 20 7946 0958",
				"f_id": fmt.Sprintf("f-%d-%d", i, j), "custom_fields": map[string]any{"plan": "gold"}}).Want(201).Map()
			persons = append(persons, p["id"].(string))
			env.Post(key, fmt.Sprintf("/persons/%s/tags", p["id"]), map[string]any{"tag_ids": tags[:1+j%2]}).Want(200, 201)
		}
		// The feed's order differs from the persons' creation order.
		env.Patch(key, "/persons/"+persons[0], map[string]any{"last_name": "Later"}).Want(200)
		env.Delete(key, "/persons/"+persons[0]+"/tags/"+tags[0]).Want(204)
		for j := range 4 {
			env.Clock.Advance(time.Second)
			env.Do(apitest.Request{Method: "POST", Path: "/breadcrumbs", Key: key,
				Header: http.Header{"Idempotency-Key": {fmt.Sprintf("crumb-%d", j)}},
				Body:   map[string]any{"flavor": []string{"form_submission", "page_view"}[j%2], "email": fmt.Sprintf("p%d@a%d.test", j, i)}}).Want(201)
		}
		env.Delete(key, "/persons/"+persons[5]+"?suppress=true").Want(204)
		env.Delete(key, "/persons/"+persons[4]).Want(204)
	}
	for _, q := range []string{
		`INSERT INTO projects (id, account_id, name, location, registration_url, site_url, created_at, start_at, end_at)
			VALUES ('prj_1', '` + accounts[0] + `', 'Summit', 'Lisbon', 'https://s.test/r', 'https://s.test', 1, 2, 3)`,
		`INSERT INTO campaigns (id, account_id, name, description, kind, state, is_enabled, project_id, created_at, start_at, end_at)
			VALUES ('cmp_1', '` + accounts[0] + `', 'Spring', 'News', 'email', 'running', 1, 'prj_1', 1, 2, 3)`,
		`UPDATE breadcrumbs SET campaign_id = 'cmp_1', project_id = 'prj_1', external_id = 'x', f_id = 'f', occurred_at = 5
			WHERE id = (SELECT MIN(id) FROM breadcrumbs)`,
		`UPDATE api_keys SET name = 'k', rate_limit = 60, expires_at = 9999999999999, revoked_at = 1, last_used_at = 2
			WHERE id = (SELECT MIN(id) FROM api_keys)`,
		`UPDATE tags SET archived_at = 7 WHERE archived_at IS NULL AND name = 'vip' AND account_id = '` + accounts[1] + `'`,
		`UPDATE custom_fields SET is_default = 1, is_read_only = 1 WHERE key = 'plan'`,
		`UPDATE custom_fields SET archived_at = 8 WHERE key = 'score' AND account_id = '` + accounts[1] + `'`,
		`UPDATE persons SET language = 'pt', pseudonym = 'ps', occupation = 'o', age = '30', ethnicity = 'e', income = 'i', edu = 'u',
			companies = '["Acme"]', address = '{"city":"Porto"}', email_opt_out = 1, is_archived = 1
			WHERE id = (SELECT MIN(id) FROM persons)`,
		`UPDATE webhooks SET disabled_reason = 'failing', last_error = 'timeout', streak_started_at = 3, streak_failures = 2,
			local_listener = 1, listener_host = 'h', is_active = 0 WHERE id = (SELECT MIN(id) FROM webhooks)`,
		`UPDATE bursts SET lease_until = 4, lease_token = 'tok', next_opened_at = 5, next_due_at = 6 WHERE person_id = (SELECT MIN(person_id) FROM bursts)`,
		`INSERT INTO deliveries (id, account_id, webhook_id, event, person_id, body, secret_version, status, attempts, last_status_code,
			last_error, next_attempt_at, lease_until, created_at, lease_token, round_start)
			SELECT 'dlv_1', account_id, id, 'person.created', 'per_x', '{"a":1}', 1, 'pending', 2, 500, 'oops', 10, 11, 12, 'lt', 1
			FROM webhooks WHERE id = (SELECT MIN(id) FROM webhooks)`,
		`INSERT INTO delivery_attempts (delivery_id, attempt, attempted_at, status_code, error, duration_ms, request_headers)
			VALUES ('dlv_1', 1, 12, 500, 'oops', 30, '{"Service-Signature":"t=1,v1=…redacted"}')`,
		`INSERT INTO webhook_secrets (webhook_id, version, secret, retired_at) SELECT id, 0, 'whsec_old', 13 FROM webhooks`,
		`INSERT INTO webhook_attempt_counts (webhook_id, hour, succeeded, failed, errors)
			SELECT id, 3600000, 1, 2, 3 FROM webhooks`,
		// The record of an id merged into an erased person, erased with it.
		`INSERT INTO erasures (id, account_id, person_id, key_id, suppressed, erased_at, erased_with)
			SELECT 'ers_merged', account_id, 'per_merged', key_id, suppressed, erased_at, person_id FROM erasures
			WHERE id = (SELECT MIN(id) FROM erasures)`,
		`UPDATE person_changes SET merged_into = 'per_other' WHERE deleted = 1 AND person_id = (SELECT MIN(person_id) FROM person_changes WHERE deleted = 1)`,
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return accounts
}

// copiedTables are the tables a transfer copies as they are.
var copiedTables = []string{"accounts", "api_keys", "tags", "custom_fields", "projects", "campaigns", "persons", "person_tags",
	"person_field_values", "breadcrumbs", "webhooks", "webhook_secrets", "bursts", "deliveries", "delivery_attempts",
	"webhook_attempt_counts", "erasures", "suppression_secrets", "suppressions"}

// filledSource is an SQLite instance filled (fill) and folded: its file,
// a connection of the test's own to it, and its accounts.
func filledSource(t *testing.T) (src string, raw *sql.DB, accounts []string) {
	t.Helper()
	src = testenv.SQLite.NewDatabase(t)
	st := testenv.SQLite.Open(t, src)
	raw = testenv.SQLite.Raw(t, src)
	rc := webhooktest.NewReceiver(t) // never called: no worker runs here
	cfg := apitest.DefaultConfig()
	cfg.Webhook = webhooktest.Settings(rc)
	accounts = fill(t, apitest.NewOn(t, st, apitest.WithConfig(cfg)), rc, raw)
	if err := st.(interface{ FoldTimelines(context.Context) error }).FoldTimelines(context.Background()); err != nil {
		t.Fatal(err)
	}
	return src, raw, accounts
}

// TestRoundTrip: an instance transferred from SQLite to PostgreSQL and back
// holds, in every table copied, every row with every column as it was; the
// change feed in the same order; and, once folded, the same timelines and
// tag bits as the source.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pg := testenv.Postgres.NewDatabase(t)
	src, raw, accounts := filledSource(t)
	checkEveryColumnHolds(t, raw)

	rep, err := transfer.Run(ctx, transfer.Options{From: src, To: pg, Batch: 7})
	if err != nil {
		t.Fatalf("sqlite to postgres: %v", err)
	}
	if rep.Rows == 0 {
		t.Fatalf("nothing copied: %+v", rep)
	}
	back := filepath.Join(t.TempDir(), "back.db")
	if _, err := transfer.Run(ctx, transfer.Options{From: pg, To: back, Batch: 3}); err != nil {
		t.Fatalf("postgres to sqlite: %v", err)
	}
	pgRaw := testenv.Postgres.Raw(t, pg)
	backRaw := testenv.SQLite.Raw(t, back)
	for _, table := range append(copiedTables, "timeline_counts", "tag_bits") {
		want := dump(t, raw, table)
		if len(want) == 0 {
			t.Errorf("%s: the source holds nothing to compare", table)
		}
		for name, db := range map[string]*sql.DB{"postgres": pgRaw, "sqlite again": backRaw} {
			if got := dump(t, db, table); !slices.Equal(got, want) {
				t.Errorf("%s on %s:\n got %v\nwant %v", table, name, got, want)
			}
		}
	}
	for _, acc := range accounts {
		want := feed(t, raw, acc, "seq")
		if len(want) < 5 {
			t.Fatalf("the source's feed of %s is %v", acc, want)
		}
		if got := feed(t, pgRaw, acc, "xid, seq"); !slices.Equal(got, want) {
			t.Errorf("feed of %s on postgres:\n got %v\nwant %v", acc, got, want)
		}
		if got := feed(t, backRaw, acc, "seq"); !slices.Equal(got, want) {
			t.Errorf("feed of %s on sqlite again:\n got %v\nwant %v", acc, got, want)
		}
	}
	var seq, entries int
	if err := backRaw.QueryRow(`SELECT (SELECT n FROM change_seq), (SELECT COUNT(*) FROM person_changes)`).Scan(&seq, &entries); err != nil || seq != entries {
		t.Errorf("change_seq is %d for %d entries (%v)", seq, entries, err)
	}
	var seen, persons int
	if err := pgRaw.QueryRow(`SELECT (SELECT COUNT(*) FROM person_seen), (SELECT COUNT(*) FROM persons)`).Scan(&seen, &persons); err != nil || seen != persons {
		t.Errorf("person_seen holds %d rows for %d persons (%v)", seen, persons, err)
	}
	// The triggers are back: a person written now moves the feed and
	// takes the next ord.
	var maxOrd int64
	if err := pgRaw.QueryRow(`SELECT MAX(ord) FROM persons`).Scan(&maxOrd); err != nil {
		t.Fatal(err)
	}
	for name, db := range map[string]*sql.DB{"postgres": pgRaw, "sqlite": backRaw} {
		if _, err := db.Exec(`INSERT INTO persons (id, account_id, upsert_result, created_at, last_seen_at) VALUES ('per_new', '` +
			accounts[0] + `', 'created', 1, 1)`); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var ord int64
		var inFeed, deltas int
		if err := db.QueryRow(`SELECT ord, (SELECT COUNT(*) FROM person_changes WHERE person_id = 'per_new'),
			(SELECT COUNT(*) FROM timeline_deltas) FROM persons WHERE id = 'per_new'`).Scan(&ord, &inFeed, &deltas); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if ord <= maxOrd || inFeed != 1 || deltas == 0 {
			t.Errorf("%s: a person written after the transfer has ord %d (the last copied: %d), %d feed entries and %d timeline deltas",
				name, ord, maxOrd, inFeed, deltas)
		}
	}
}

// checkEveryColumnHolds fails for a column of a table copied that holds
// nothing but NULL in the source: its conversion would go untested.
func checkEveryColumnHolds(t *testing.T, db *sql.DB) {
	t.Helper()
	for _, table := range append(copiedTables, "person_changes") {
		rows, err := db.Query(`SELECT name FROM pragma_table_info(?)`, table)
		if err != nil {
			t.Fatal(err)
		}
		var cols []string
		for rows.Next() {
			var c string
			if err := rows.Scan(&c); err != nil {
				t.Fatal(err)
			}
			cols = append(cols, c)
		}
		rows.Close()
		for _, c := range cols {
			var n int
			if err := db.QueryRow(`SELECT COUNT(*) FROM ` + table + ` WHERE ` + c + ` IS NOT NULL`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				t.Errorf("%s.%s holds only NULL in the test's source: give it a value in fill", table, c)
			}
		}
	}
}

// dump reads every row of a table as text, sorted, with each engine's
// types as one: booleans as 0 or 1, bytes in hex.
func dump(t *testing.T, db *sql.DB, table string) []string {
	t.Helper()
	rows, err := db.Query(`SELECT * FROM ` + table)
	if err != nil {
		t.Fatalf("%s: %v", table, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		parts := make([]string, len(cols))
		for i, v := range vals {
			switch x := v.(type) {
			case bool:
				parts[i] = map[bool]string{false: "0", true: "1"}[x]
			case []byte:
				parts[i] = "x" + hex.EncodeToString(x)
			case nil:
				parts[i] = "NULL"
			default:
				parts[i] = fmt.Sprint(x)
			}
			parts[i] = cols[i] + "=" + parts[i]
		}
		slices.Sort(parts) // the engines order some columns differently
		out = append(out, strings.Join(parts, " "))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// feed reads an account's change feed in its order.
func feed(t *testing.T, db *sql.DB, account, order string) []string {
	t.Helper()
	rows, err := db.Query(`SELECT person_id, changed_at, deleted, COALESCE(merged_into, '') FROM person_changes WHERE account_id = $1 ORDER BY `+order, account)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, merged string
		var at int64
		var deleted bool
		if err := rows.Scan(&id, &at, &deleted, &merged); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s@%d deleted=%v merged=%s", id, at, deleted, merged))
	}
	return out
}

// TestRefusesFilledTarget: a target that holds an account is refused
// before anything is written to it, migrations included.
func TestRefusesFilledTarget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := testenv.SQLite.NewDatabase(t)
	testenv.SQLite.Open(t, src).Close()
	dst := testenv.SQLite.NewDatabase(t)
	st := testenv.SQLite.Open(t, dst)
	if err := st.CreateAccount(ctx, domain.Account{ID: "acc_there", Name: "there", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	raw := testenv.SQLite.Raw(t, dst)
	before := dump(t, raw, "goose_db_version")
	_, err := transfer.Run(ctx, transfer.Options{From: src, To: dst})
	var notEmpty *transfer.NotEmptyError
	if !errors.As(err, &notEmpty) || notEmpty.Table != "accounts" {
		t.Fatalf("a filled target: %v", err)
	}
	if got := dump(t, raw, "accounts"); len(got) != 1 || !slices.Equal(dump(t, raw, "goose_db_version"), before) {
		t.Fatalf("the refused target changed: %v", got)
	}
	if _, err := transfer.Run(ctx, transfer.Options{From: src, To: src}); !errors.Is(err, transfer.ErrSameDatabase) {
		t.Fatalf("a transfer onto itself: %v", err)
	}
}

// TestWhileServing: a source that takes writes while it is read is copied
// as one snapshot of it: every count the transfer checks holds, and the
// writes after the snapshot are not in the target. Both directions.
func TestWhileServing(t *testing.T) {
	t.Parallel()
	for _, dir := range []struct {
		name     string
		from, to testenv.Engine
	}{{"sqlite to postgres", testenv.SQLite, testenv.Postgres}, {"postgres to sqlite", testenv.Postgres, testenv.SQLite}} {
		t.Run(dir.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			src, dst := dir.from.NewDatabase(t), dir.to.NewDatabase(t)
			st := dir.from.Open(t, src)
			acc := "acc_serving"
			if err := st.CreateAccount(ctx, domain.Account{ID: acc, Name: "serving", CreatedAt: time.Now()}); err != nil {
				t.Fatal(err)
			}
			upsert := func(i int) error {
				_, _, err := st.UpsertPerson(ctx, acc, domain.PersonUpsert{
					Email:     domain.Opt[string]{Set: true, Value: fmt.Sprintf("p%d@x.test", i)},
					FirstName: domain.Opt[string]{Set: true, Value: "Grace"}}, store.Write{Now: time.Now().UTC(), Window: time.Minute})
				return err
			}
			for i := range 200 {
				if err := upsert(i); err != nil {
					t.Fatal(err)
				}
			}
			stop, done := make(chan struct{}), make(chan int)
			go func() {
				i := 200
				for {
					select {
					case <-stop:
						done <- i
						return
					default:
					}
					if err := upsert(i); err != nil {
						t.Error(err)
					}
					i++
				}
			}()
			rep, err := transfer.Run(ctx, transfer.Options{From: src, To: dst, Batch: 16})
			close(stop)
			written := <-done
			if err != nil {
				t.Fatal(err)
			}
			var persons int64
			for _, r := range rep.Tables {
				if r.Table == "persons" {
					persons = r.Target
				}
			}
			if persons < 200 || persons > int64(written) {
				t.Fatalf("%d persons copied; 200 were there before, %d at the end", persons, written)
			}
			t.Logf("%d persons copied of the %d written by the end", persons, written)
		})
	}
}

// TestFinishesErasureUnderWay: an erasure the source's snapshot caught
// between its chunks (SQLite erases a person's breadcrumbs a chunk at a
// time, erasure_purges saying so) is finished in the target: the person
// ends erased there, never half.
func TestFinishesErasureUnderWay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src, dst := testenv.SQLite.NewDatabase(t), testenv.Postgres.NewDatabase(t)
	st := testenv.SQLite.Open(t, src)
	acc := "acc_erasing"
	if err := st.CreateAccount(ctx, domain.Account{ID: acc, Name: "erasing", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	p, _, err := st.UpsertPerson(ctx, acc, domain.PersonUpsert{Email: domain.Opt[string]{Set: true, Value: "gone@x.test"}},
		store.Write{Now: time.Now().UTC(), Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if _, err := testenv.SQLite.Raw(t, src).Exec(`INSERT INTO erasure_purges (account_id, person_id, key_id, suppress, started_at)
		VALUES (?, ?, 'key_x', 1, 1)`, acc, p.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := transfer.Run(ctx, transfer.Options{From: src, To: dst}); err != nil {
		t.Fatal(err)
	}
	var persons, purges, erasures, suppressions int
	if err := testenv.Postgres.Raw(t, dst).QueryRow(`SELECT (SELECT COUNT(*) FROM persons), (SELECT COUNT(*) FROM erasure_purges),
		(SELECT COUNT(*) FROM erasures), (SELECT COUNT(*) FROM suppressions)`).Scan(&persons, &purges, &erasures, &suppressions); err != nil {
		t.Fatal(err)
	}
	if persons != 0 || purges != 0 || erasures != 1 || suppressions == 0 {
		t.Fatalf("after the transfer: %d persons, %d purges under way, %d erasures, %d suppressions", persons, purges, erasures, suppressions)
	}
}

// TestThroughPgBouncer: a transfer into and out of PostgreSQL behind a
// transaction-mode pooler (the URL a fleet serves from) migrates, copies
// and folds there as it does directly: the target holds every row of the
// source, the timelines and tag bits included, and serves them.
func TestThroughPgBouncer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bounced := testenv.PgBouncer.NewDatabase(t)
	src, raw, accounts := filledSource(t)

	if _, err := transfer.Run(ctx, transfer.Options{From: src, To: bounced}); err != nil {
		t.Fatalf("sqlite to postgres through pgbouncer: %v", err)
	}
	back := filepath.Join(t.TempDir(), "back.db")
	if _, err := transfer.Run(ctx, transfer.Options{From: bounced, To: back}); err != nil {
		t.Fatalf("postgres through pgbouncer to sqlite: %v", err)
	}
	pgRaw := testenv.Postgres.Raw(t, testenv.DirectOf(t, bounced))
	backRaw := testenv.SQLite.Raw(t, back)
	for _, table := range append(copiedTables, "timeline_counts", "tag_bits") {
		want := dump(t, raw, table)
		for name, db := range map[string]*sql.DB{"postgres": pgRaw, "sqlite again": backRaw} {
			if got := dump(t, db, table); !slices.Equal(got, want) {
				t.Errorf("%s on %s:\n got %v\nwant %v", table, name, got, want)
			}
		}
	}
	served := testenv.PgBouncer.Open(t, bounced)
	for _, acc := range accounts {
		persons, _, err := served.ListPersons(ctx, acc, domain.PersonSelection{Mode: domain.PersonWindow,
			Since: time.Unix(0, 0)}, domain.PageRequest{Page: 1, Size: 100})
		if err != nil || len(persons) != 4 {
			t.Errorf("the target through the pooler lists %d persons of %s (%v), want the 4 not erased", len(persons), acc, err)
		}
	}
}
