package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/httpapi/apitest"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/internal/webhook"
	"github.com/pds-dev/pds/internal/webhook/webhooktest"
)

// personReport is what a test reads of pds persons report's document.
type personReport struct {
	AccountID string `json:"account_id"`
	PersonID  string `json:"person_id"`
	Person    struct {
		ID           string            `json:"id"`
		Email        string            `json:"email"`
		ExternalID   string            `json:"external_id"`
		FirstName    string            `json:"first_name"`
		CustomFields map[string]string `json:"custom_fields"`
	} `json:"person"`
	FID  *string `json:"f_id"`
	Tags []struct {
		ID, Name string
		Archived bool
	} `json:"tags"`
	CustomValues []struct {
		Key, Value string
	} `json:"custom_values"`
	Breadcrumbs []struct {
		ID, Flavor string
		ExternalID *string `json:"external_id"`
	} `json:"breadcrumbs"`
	Deliveries []struct {
		ID, Event, Status string
		Body              json.RawMessage `json:"body"`
		AttemptLog        []struct {
			StatusCode     *int              `json:"status_code"`
			RequestHeaders map[string]string `json:"request_headers"`
		} `json:"attempt_log"`
	} `json:"deliveries"`
}

// TestPersonsReport runs pds persons report on a person written through
// the API, with tags, custom values, breadcrumbs and a webhook delivered
// to a real receiver, beside a second person of the account and a person
// of another account that share its kind of data: the report holds all of
// the first and nothing of the others, and an absent or foreign person is
// a clear failure.
func TestPersonsReport(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		db := eng.NewDatabase(t)
		rc := webhooktest.NewReceiver(t)
		cfg := apitest.DefaultConfig()
		cfg.Webhook = webhooktest.Settings(rc)
		env := apitest.NewOn(t, eng.Open(t, db), apitest.WithConfig(cfg))
		worker, err := webhook.NewWorker(env.Store, webhook.PersonRenderer{Persons: env.Store, PublicURL: cfg.PublicURL},
			env.Clock, cfg.Webhook, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		acc, other := env.NewAccount(), env.NewAccount()
		key, otherKey := env.Key(acc), env.Key(other)
		env.Post(key, "/webhooks", map[string]any{"name": "crm", "target_url": rc.URL, "events": []string{"person.created"}}).Want(201)
		env.Post(otherKey, "/webhooks", map[string]any{"name": "crm", "target_url": rc.URL, "events": []string{"person.created"}}).Want(201)
		var tag struct{ ID string }
		env.Post(key, "/tags", map[string]any{"name": "vip", "context": "person"}).Want(201).JSON(&tag)
		env.Post(key, "/custom-fields", map[string]any{"collection": "Person", "data_type": "str", "key": "plan"}).Want(201)
		env.Post(otherKey, "/custom-fields", map[string]any{"collection": "Person", "data_type": "str", "key": "plan"}).Want(201)

		type person struct{ ID string }
		var ada, bob, stranger person
		env.Post(key, "/persons", map[string]any{"external_id": "ext-ada", "email": "ada@report.test", "first_name": "Ada",
			"custom_fields": map[string]any{"plan": "gold-ada"}}).Want(201).JSON(&ada)
		env.Post(key, "/persons", map[string]any{"external_id": "ext-bob", "email": "bob@report.test", "first_name": "Bob",
			"custom_fields": map[string]any{"plan": "gold-bob"}}).Want(201).JSON(&bob)
		env.Post(otherKey, "/persons", map[string]any{"external_id": "ext-stranger", "email": "stranger@report.test",
			"custom_fields": map[string]any{"plan": "gold-stranger"}}).Want(201).JSON(&stranger)
		env.Post(key, "/persons/"+ada.ID+"/tags", map[string]any{"tag_ids": []string{tag.ID}}).Want(200)
		var crumbs []string
		for _, flavor := range []string{"page_view", "form_submission", "page_view"} {
			var b struct{ ID string }
			env.Post(key, "/breadcrumbs", map[string]any{"flavor": flavor, "external_id": "ext-ada"}).Want(201).JSON(&b)
			crumbs = append(crumbs, b.ID)
			env.Clock.Advance(time.Second)
		}
		env.Post(key, "/breadcrumbs", map[string]any{"flavor": "page_view", "person_id": bob.ID}).Want(201)
		env.Post(otherKey, "/breadcrumbs", map[string]any{"flavor": "page_view", "person_id": stranger.ID}).Want(201)
		env.Clock.Advance(10 * time.Minute)
		if err := worker.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		rc.WaitFor(t, 3, 10*time.Second)

		out, err := pds(t, "persons", "report", "--account", acc, "--person", ada.ID, "--database", db)
		if err != nil {
			t.Fatalf("report: %v\n%s", err, out)
		}
		var r personReport
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("not one JSON document: %v\n%s", err, out)
		}
		if r.AccountID != acc || r.PersonID != ada.ID || r.Person.ID != ada.ID || r.Person.Email != "ada@report.test" ||
			r.Person.ExternalID != "ext-ada" || r.Person.FirstName != "Ada" || r.Person.CustomFields["plan"] != "gold-ada" {
			t.Errorf("person %+v", r.Person)
		}
		if len(r.Tags) != 1 || r.Tags[0].ID != tag.ID || r.Tags[0].Name != "vip" {
			t.Errorf("tags %+v", r.Tags)
		}
		if len(r.CustomValues) != 1 || r.CustomValues[0].Key != "plan" || r.CustomValues[0].Value != "gold-ada" {
			t.Errorf("custom values %+v", r.CustomValues)
		}
		if len(r.Breadcrumbs) != len(crumbs) {
			t.Fatalf("breadcrumbs %+v, want %v", r.Breadcrumbs, crumbs)
		}
		for i, b := range r.Breadcrumbs {
			if b.ID != crumbs[i] || b.ExternalID == nil || *b.ExternalID != "ext-ada" {
				t.Errorf("breadcrumb %d: %+v, want %s carrying ext-ada", i, b, crumbs[i])
			}
		}
		if len(r.Deliveries) != 1 {
			t.Fatalf("deliveries %+v", r.Deliveries)
		}
		d := r.Deliveries[0]
		if d.Event != domain.EventPersonCreated || d.Status != domain.DeliverySucceeded || !strings.Contains(string(d.Body), `"ada@report.test"`) ||
			len(d.AttemptLog) != 1 || d.AttemptLog[0].StatusCode == nil || *d.AttemptLog[0].StatusCode/100 != 2 ||
			!strings.Contains(d.AttemptLog[0].RequestHeaders["Service-Signature"], domain.Redacted) {
			t.Errorf("delivery %s %s %s, attempts %+v", d.Event, d.Status, d.Body, d.AttemptLog)
		}
		for _, theirs := range []string{bob.ID, "bob@report.test", "ext-bob", "gold-bob", stranger.ID, "stranger@report.test", "gold-stranger"} {
			if strings.Contains(out, theirs) {
				t.Errorf("the report of %s holds %q, another person's", ada.ID, theirs)
			}
		}

		for _, tc := range []struct{ account, person, want string }{
			{other, ada.ID, "holds no person"},
			{acc, stranger.ID, "holds no person"},
			{acc, "per_absent", "holds no person"},
			{"acc_absent", ada.ID, "there is no account"},
		} {
			out, err := pds(t, "persons", "report", "--account", tc.account, "--person", tc.person, "--database", db)
			if !errors.Is(err, domain.ErrNotFound) || exitStatus(err) != 1 || !strings.Contains(err.Error(), tc.want) || out != "" {
				t.Errorf("report of %s in %s: %v (status %d), printed %q; want %q and nothing printed", tc.person, tc.account, err, exitStatus(err), out, tc.want)
			}
		}
		if _, err := pds(t, "persons", "report", "--account", acc, "--database", db); exitStatus(err) != 2 || !strings.Contains(err.Error(), "--person is required") {
			t.Errorf("without --person: %v", err)
		}

		// Once erased, the person is absent to the report too.
		if _, err := env.Store.ErasePerson(context.Background(), acc, ada.ID, domain.EraseRequest{}, store.Write{Now: env.Clock.Now(), Window: time.Minute}); err != nil {
			t.Fatal(err)
		}
		if out, err := pds(t, "persons", "report", "--account", acc, "--person", ada.ID, "--database", db); !errors.Is(err, domain.ErrNotFound) || out != "" {
			t.Errorf("the report of an erased person: %v, printed %q", err, out)
		}
	})
}

// TestPersonsReportMemory holds the report of a person with 100,000
// breadcrumbs to the memory of a page: the live heap, measured after a
// collection before the command and at every megabyte of its output,
// never spans more than reportMemoryBound, while the whole list would hold
// tens of megabytes (the document is over 30). Not parallel, so that no other test's
// heap is counted.
func TestPersonsReportMemory(t *testing.T) {
	const crumbs = 100_000
	const reportMemoryBound = 8 << 20
	for _, eng := range testenv.Engines {
		t.Run(eng.Name, func(t *testing.T) {
			db := eng.NewDatabase(t)
			st := eng.Open(t, db)
			ctx := context.Background()
			acc := domain.NewID("acc")
			if err := st.CreateAccount(ctx, domain.Account{ID: acc, Name: "memory", CreatedAt: apitest.Start}); err != nil {
				t.Fatal(err)
			}
			p, _, err := st.UpsertPerson(ctx, acc, domain.PersonUpsert{ExternalID: domain.Opt[string]{Set: true, Value: "ext-mem"}},
				store.Write{Now: apitest.Start, Window: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			// One statement seeds them all.
			insert := `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ` + strconv.Itoa(crumbs) + `)
				INSERT INTO breadcrumbs (id, account_id, flavor, person_id, email, external_id, activity_at, created_at)
				SELECT 'bc_mem_' || i, $1, 'page_view', $2, 'mem@report.test', 'ext-mem', CAST($3 AS BIGINT) + i, CAST($3 AS BIGINT) FROM n`
			if eng.Name == testenv.SQLite.Name {
				insert = strings.NewReplacer("$1", "?1", "$2", "?2", "$3", "?3").Replace(insert)
			}
			start := time.Now()
			raw := eng.Raw(t, db)
			tx, err := raw.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			// Without the triggers (the timelines' deltas, and on
			// PostgreSQL the foreign keys), which the report does not read
			// and which cost most of the seeding's time; on SQLite, whose
			// triggers cannot be held, they are dropped from this
			// throwaway file, whose timelines then go unread.
			if eng.Name == testenv.SQLite.Name {
				if _, err := tx.ExecContext(ctx, `DROP TRIGGER breadcrumbs_timeline_insert`); err != nil {
					t.Fatal(err)
				}
			} else if _, err := tx.ExecContext(ctx, `SET LOCAL session_replication_role = replica`); err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, insert, acc, p.ID, apitest.Start.UnixMilli()); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			t.Logf("seeded in %v", time.Since(start))
			// The test's store and connection are not the command's: what
			// they hold is not its to count.
			raw.Close()
			st.Close()
			seeded := time.Now()
			out := &heapSampler{}
			out.measure()
			if err := run(ctx, []string{"persons", "report", "--account", acc, "--person", p.ID, "--database", db},
				strings.NewReader(""), out, io.Discard); err != nil {
				t.Fatal(err)
			}
			t.Logf("reported in %v", time.Since(seeded))
			growth := out.peak - out.lowest
			t.Logf("%d breadcrumbs: %.1f MB of JSON; live heap between %.1f and %.1f MB, %.1f MB apart (%d measures)",
				out.breadcrumbs, float64(out.written)/1e6, float64(out.lowest)/1e6, float64(out.peak)/1e6, float64(growth)/1e6, out.measures)
			if out.breadcrumbs != crumbs {
				t.Fatalf("the report holds %d breadcrumbs, want %d", out.breadcrumbs, crumbs)
			}
			if growth > reportMemoryBound {
				t.Errorf("the live heap grew by %d bytes while reporting, more than %d: the report holds more than a page", growth, reportMemoryBound)
			}
			if out.written < 3*reportMemoryBound {
				t.Errorf("the document is %d bytes: too small to tell a page from the whole list", out.written)
			}
		})
	}
}

// heapSampler is a report's standard output: it counts the breadcrumbs
// written and, before the report and at every megabyte of it, collects
// garbage and records the live heap: the largest while the report is
// written in peak, the smallest in lowest. Their difference bounds what
// the report held from above, even when something held before it is
// freed meanwhile (the seeding's PostgreSQL connections, whose memory
// goes once their goroutines end).
type heapSampler struct {
	written, sinceMeasure int
	peak, lowest          uint64
	measures              int
	breadcrumbs           int
	carry                 []byte // the end of the last write, too short to hold a breadcrumb's id
}

// crumbID starts each seeded breadcrumb of the report.
const crumbID = `"id": "bc_mem_`

func (h *heapSampler) Write(b []byte) (int, error) {
	h.written += len(b)
	h.sinceMeasure += len(b)
	joined := append(h.carry, b...)
	h.breadcrumbs += strings.Count(string(joined), crumbID)
	h.carry = append([]byte(nil), joined[max(0, len(joined)-len(crumbID)+1):]...)
	if h.sinceMeasure >= 1<<20 {
		h.measure()
	}
	return len(b), nil
}

func (h *heapSampler) measure() {
	h.sinceMeasure = 0
	h.measures++
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	if h.written > 0 {
		h.peak = max(h.peak, m.HeapAlloc)
	}
	if h.lowest == 0 || m.HeapAlloc < h.lowest {
		h.lowest = m.HeapAlloc
	}
}
