package httpapi_test

import (
	"bytes"
	"context"
	"database/sql"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/httpapi/apitest"
	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/internal/webhook"
	"github.com/pds-dev/pds/internal/webhook/webhooktest"
)

// TestErasureLeavesNothingBehind writes a person with distinctive
// identifiers, attributes, a custom value and breadcrumbs, delivers it to a
// real HTTPS receiver (and breadcrumbs of another person that carried its
// email and f_id), erases it, and looks for its bytes: on SQLite in the
// database file and its write-ahead log once checkpointed (secure_delete),
// on PostgreSQL in every live row of every table of the schema.
func TestErasureLeavesNothingBehind(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		database := eng.NewDatabase(t)
		st := eng.Open(t, database)
		rc := webhooktest.NewReceiver(t)
		settings := webhooktest.Settings(rc)
		cfg := apitest.DefaultConfig()
		cfg.Webhook = settings
		cfg.RateLimit = 10_000
		env := apitest.NewOn(t, st, apitest.WithConfig(cfg))
		worker, err := webhook.NewWorker(st, webhook.PersonRenderer{Persons: st, PublicURL: cfg.PublicURL}, env.Clock, settings,
			slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		key := env.Key(env.NewAccount())
		createWebhook(env, key, rc.URL, "person.created", "person.updated", "person.deleted")
		createField(env, key, map[string]any{"collection": "Person", "data_type": "str", "key": "motto"})

		mark := strings.ToLower("q" + domain.RandomHex(6))
		traces := []string{mark + "mail", mark + "xid", mark + "fid", mark + "555", mark + "first", mark + "last", mark + "motto"}
		p := upsertPerson(env, key, map[string]any{"email": strings.ToUpper(mark) + "MAIL@example.com", "external_id": mark + "xid",
			"f_id": mark + "fid", "phone": mark + "555", "first_name": mark + "first", "last_name": mark + "last",
			"custom_fields": map[string]any{"motto": mark + "motto"}}, 201)
		for range 1100 { // more than a page holds, more than SQLite erases in one chunk
			env.Post(key, "/breadcrumbs", map[string]any{"flavor": "page_view", "email": mark + "mail@example.com"}).Want(201)
		}
		// Another person's breadcrumbs that carried the person's identifiers.
		upsertPerson(env, key, map[string]any{"external_id": "bystander"}, 201)
		env.Post(key, "/breadcrumbs", map[string]any{"flavor": "page_view", "external_id": "bystander", "email": mark + "mail@example.com"}).Want(201)
		env.Post(key, "/breadcrumbs", map[string]any{"flavor": "page_view", "external_id": "bystander", "f_id": mark + "fid"}).Want(201)
		env.Clock.Advance(6 * time.Minute) // past the burst's window
		if err := worker.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := rc.Requests()
		if len(got) != 2 || !slices.ContainsFunc(got, func(r webhooktest.Request) bool {
			return bytes.Contains(bytes.ToLower(r.Body), []byte(mark+"motto"))
		}) {
			t.Fatalf("receiver got %d deliveries, want the person's and the bystander's", len(got))
		}

		raw := eng.Raw(t, database)
		held := func() []string {
			t.Helper()
			var text string
			if eng.Name == testenv.SQLite.Name {
				text = sqliteBytes(t, raw, database)
			} else {
				text = postgresRows(t, raw)
			}
			var found []string
			for _, tr := range traces {
				if strings.Contains(text, tr) {
					found = append(found, tr)
				}
			}
			return found
		}
		if found := held(); len(found) != len(traces) {
			t.Fatalf("before the erasure the database holds only %v of %v: the test cannot see them", found, traces)
		}
		env.Delete(key, "/persons/"+p.ID).Want(204)
		if err := worker.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := rc.Requests(); len(got) != 3 {
			t.Fatalf("receiver got %d deliveries, want the person.deleted too", len(got))
		}
		if found := held(); len(found) != 0 {
			t.Fatalf("after the erasure the database still holds %v", found)
		}
	})
}

// sqliteBytes checkpoints the database's write-ahead log into the file,
// truncating the log, and returns both files' bytes, lower-cased.
func sqliteBytes(t *testing.T, raw *sql.DB, path string) string {
	t.Helper()
	var busy, frames, copied int
	if err := raw.QueryRow(`PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &frames, &copied); err != nil || busy != 0 {
		t.Fatalf("checkpoint: busy %d, %v", busy, err)
	}
	var all []byte
	for _, name := range []string{path, path + "-wal"} {
		b, err := os.ReadFile(name)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	return string(bytes.ToLower(all))
}

// postgresRows is every live row of every table of the schema, as text,
// lower-cased.
func postgresRows(t *testing.T, raw *sql.DB) string {
	t.Helper()
	rows, err := raw.Query(`SELECT table_name FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, name)
	}
	if err := rows.Err(); err != nil || len(tables) < 10 {
		t.Fatalf("tables %v, %v", tables, err)
	}
	var b strings.Builder
	for _, table := range tables {
		rows, err := raw.Query(`SELECT t::text FROM "` + table + `" t`)
		if err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		for rows.Next() {
			var text string
			if err := rows.Scan(&text); err != nil {
				t.Fatal(err)
			}
			b.WriteString(text)
			b.WriteByte('\n')
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return strings.ToLower(b.String())
}
