package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/testenv"
)

var seedEpoch = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// exec runs one statement written with '?' placeholders on the raw database.
func (rs rawStore) exec(t testing.TB, q string, args ...any) {
	t.Helper()
	if rs.Engine() == "postgres" {
		n := 0
		q = rebindAll(q, func() string { n++; return "$" + strconv.Itoa(n) })
	}
	if _, err := rs.db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// analyze refreshes the planner's statistics of the test's own tables. On
// PostgreSQL a bare ANALYZE reaches every schema of the database: those of
// the tests running beside it (and a benchmark's, pdsbench's included),
// whose statistics must be only what their own writes left.
func (rs rawStore) analyze(t testing.TB) {
	t.Helper()
	if rs.Engine() != "postgres" {
		rs.exec(t, `ANALYZE`)
		return
	}
	var tables string
	err := rs.db.QueryRow(`SELECT string_agg(quote_ident(tablename), ', ') FROM pg_tables WHERE schemaname = current_schema()`).Scan(&tables)
	if err != nil {
		t.Fatal(err)
	}
	rs.exec(t, `ANALYZE `+tables)
}

func rebindAll(q string, next func() string) string {
	var b strings.Builder
	for _, r := range q {
		if r == '?' {
			b.WriteString(next())
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// insertRows inserts rows in batches of multi-row INSERTs.
func (rs rawStore) insertRows(t testing.TB, table, columns string, rows [][]any) {
	t.Helper()
	for len(rows) > 0 {
		batch := rows[:min(len(rows), 200)]
		rows = rows[len(batch):]
		tuple := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(batch[0])), ", ") + ")"
		var args []any
		tuples := make([]string, len(batch))
		for i, r := range batch {
			tuples[i] = tuple
			args = append(args, r...)
		}
		rs.exec(t, `INSERT INTO `+table+` (`+columns+`) VALUES `+strings.Join(tuples, ", "), args...)
	}
}

// seedDeliveries makes a subscription of the account whose log holds n
// deliveries, one a second from seedEpoch, to the account's first persons,
// alternately person.created and person.updated; one in ten failed, one
// in fifty pending, the others succeeded. It returns the subscription's id.
func (rs rawStore) seedDeliveries(t testing.TB, acc string, n int) string {
	t.Helper()
	hook := domain.NewID("wh")
	ms := seedEpoch.UnixMilli()
	rs.exec(t, `INSERT INTO webhooks (id, account_id, name, target_url, events, secret, created_at, updated_at)
		VALUES (?, ?, 'seed', 'https://example.com/hook', '["person.created","person.updated"]', 'whsec_seed', ?, ?)`, hook, acc, ms, ms)
	var rows [][]any
	for i := range n {
		status, next := domain.DeliverySucceeded, any(nil)
		switch {
		case i%20 == 3 || i%20 == 14:
			status = domain.DeliveryFailed
		case i%50 == 7:
			status, next = domain.DeliveryPending, ms+int64(i)*1000
		}
		rows = append(rows, []any{fmt.Sprintf("%s%08d", hook[len(hook)-24:], i), acc, hook, domain.WebhookEvents[i%2],
			seededPerson(acc, i%1000), `{}`, 1, status, 1, next, ms + int64(i)*1000})
	}
	rs.insertRows(t, "deliveries", "id, account_id, webhook_id, event, person_id, body, secret_version, status, attempts, next_attempt_at, created_at", rows)
	return hook
}

// seededPerson is the id seedAccount gives the account's i-th person.
func seededPerson(acc string, i int) string { return fmt.Sprintf("per_%s_%06d", acc, i) }

// seedAccount makes an account holding n persons, each seen a second apart
// from seedEpoch, holding 3 of 20 tags and 3 of 5 custom field values. It
// returns the account id and its tag ids.
func (rs rawStore) seedAccount(t testing.TB, n int) (string, []string) {
	t.Helper()
	acc := domain.NewID("acc")
	ms := seedEpoch.UnixMilli()
	rs.exec(t, `INSERT INTO accounts (id, name, created_at) VALUES (?, ?, ?)`, acc, "seed", ms)
	var tags, fields []string
	var tagRows, fieldRows, personRows, linkRows, valueRows [][]any
	for i := range 20 {
		id := fmt.Sprintf("tag_%s_%02d", acc, i)
		tags = append(tags, id)
		tagRows = append(tagRows, []any{id, acc, fmt.Sprintf("tag %d", i), "person", ms})
	}
	for i := range 5 {
		id := fmt.Sprintf("cf_%s_%d", acc, i)
		fields = append(fields, id)
		fieldRows = append(fieldRows, []any{id, acc, "Person", "str", fmt.Sprintf("field_%d", i), "text", ms})
	}
	for i := range n {
		id := seededPerson(acc, i)
		email := fmt.Sprintf("p%d@seed.test", i)
		seen := ms + int64(i)*1000
		personRows = append(personRows, []any{id, acc, email, email, fmt.Sprintf("ext-%d", i), "Seed", domain.UpsertCreated, ms, seen})
		for k := range 3 {
			linkRows = append(linkRows, []any{acc, id, tags[(i+k*7)%len(tags)], ms, seen})
			valueRows = append(valueRows, []any{acc, id, fields[(i+k)%len(fields)], fmt.Sprintf("value %d", i)})
		}
	}
	rs.insertRows(t, "tags", "id, account_id, name, context, created_at", tagRows)
	rs.insertRows(t, "custom_fields", "id, account_id, collection, data_type, key, form_type, created_at", fieldRows)
	rs.insertRows(t, "persons", "id, account_id, email, email_norm, external_id, first_name, upsert_result, created_at, last_seen_at", personRows)
	rs.insertRows(t, "person_tags", "account_id, person_id, tag_id, created_at, last_seen_at", linkRows)
	rs.insertRows(t, "person_field_values", "account_id, person_id, field_id, value", valueRows)
	return acc, tags
}

// TestListPersonsQueryCount holds a page of persons to a fixed number of
// statements, whatever its size: the count (in window mode one sum over the
// buckets of the timeline; with tags, whether they are live first, on
// PostgreSQL the planner settings that merge the tags, the persons before
// and since the window, and as most are since, the tag bits and the holders
// merged before the window), the page (in window mode its ids, then its
// rows), the tags of the whole page and the custom field values of the
// whole page.
func TestListPersonsQueryCount(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rs := openCounting(t, eng)
		rs.StopFolding()
		acc, tags := rs.seedAccount(t, 150)
		rs.seedAccount(t, 10)
		ctx := context.Background()
		since := seedEpoch
		tagged := int64(8)
		if eng.Name == "postgres" {
			tagged++
		}
		for _, tc := range []struct {
			name  string
			q     domain.PersonSelection
			size  int
			items int
			want  int64
		}{
			{"window, 100", domain.PersonSelection{Mode: domain.PersonWindow, Since: since}, 100, 100, 5},
			{"window, 10", domain.PersonSelection{Mode: domain.PersonWindow, Since: since}, 10, 10, 5},
			{"window with tags", domain.PersonSelection{Mode: domain.PersonWindow, Since: since, TagIDs: []string{tags[0], tags[7]}}, 100, 15, tagged},
			{"lookup", domain.PersonSelection{Mode: domain.PersonByEmail, Key: "P3@seed.test"}, 25, 1, 1},
		} {
			var got []domain.Person
			n := rs.countStatements(func() {
				var err error
				got, _, err = rs.ListPersons(ctx, acc, tc.q, domain.PageRequest{Page: 1, Size: tc.size})
				if err != nil {
					t.Fatal(err)
				}
			})
			if tc.items > 0 && len(got) != tc.items {
				t.Fatalf("%s: %d items, want %d", tc.name, len(got), tc.items)
			}
			if len(got) > 0 && (len(got[0].TagIDs) != 3 || len(got[0].CustomFields) != 3) {
				t.Fatalf("%s: item without its tags or values: %+v", tc.name, got[0])
			}
			if n != tc.want {
				t.Fatalf("%s: %d statements for a page of %d, want %d", tc.name, n, len(got), tc.want)
			}
			t.Logf("%s: %d items in %d statements", tc.name, len(got), n)
		}
		// Get Person is one statement: the person, its tags and its values.
		if n := rs.countStatements(func() {
			p, err := rs.GetPerson(ctx, acc, seededPerson(acc, 3))
			if err != nil {
				t.Fatal(err)
			}
			if len(p.TagIDs) != 3 || len(p.TagNames) != 3 || len(p.CustomFields) != 3 {
				t.Fatalf("get person without its tags or values: %+v", p)
			}
		}); n != 1 {
			t.Fatalf("get person: %d statements, want 1", n)
		}
	})
}

// TestBurstsOnceClosed closes each burst as the webhook worker does (by
// deleting its row) and shows which later writes open a new one, with which
// event.
func TestBurstsOnceClosed(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rs := openCounting(t, eng)
		acc, tags := rs.seedAccount(t, 0)
		ctx := context.Background()
		now := seedEpoch
		w := func() store.Write { return store.Write{Now: now, Window: time.Minute} }
		p, _, err := rs.UpsertPerson(ctx, acc, domain.PersonUpsert{ExternalID: domain.Opt[string]{Set: true, Value: "x"}}, w())
		if err != nil {
			t.Fatal(err)
		}
		closeBurst := func() { rs.exec(t, `DELETE FROM bursts WHERE person_id = ?`, p.ID) }
		wantBurst := func(what, event string) {
			t.Helper()
			b, err := rs.PendingBurst(ctx, acc, p.ID)
			switch {
			case event == "" && !errors.Is(err, domain.ErrNotFound):
				t.Fatalf("%s: burst %+v (%v), want none", what, b, err)
			case event != "" && (err != nil || b.Event != event || !b.OpenedAt.Equal(now) || !b.DueAt.Equal(now.Add(time.Minute))):
				t.Fatalf("%s: burst %+v (%v), want %s opened now", what, b, err, event)
			}
		}
		wantBurst("creation", domain.EventPersonCreated)
		closeBurst()

		steps := []struct {
			what  string
			write func() error
			event string
		}{
			{"an upsert that changes nothing", func() error {
				_, _, err := rs.UpsertPerson(ctx, acc, domain.PersonUpsert{ExternalID: domain.Opt[string]{Set: true, Value: "x"}}, w())
				return err
			}, ""},
			{"a breadcrumb for the person", func() error {
				_, _, err := rs.AppendBreadcrumb(ctx, acc, domain.BreadcrumbInput{Flavor: "page_view", ExternalID: strRef("x")}, w())
				return err
			}, ""},
			{"removing a tag not held", func() error { return rs.RemovePersonTag(ctx, acc, p.ID, tags[0], w()) }, ""},
			{"a patch with the values held", func() error {
				_, err := rs.UpdatePerson(ctx, acc, p.ID, domain.PersonUpdate{FirstName: domain.Opt[string]{Set: true, Null: true}}, w())
				return err
			}, ""},
			{"attaching a tag", func() error { _, err := rs.AddPersonTags(ctx, acc, p.ID, []string{tags[0]}, w()); return err }, domain.EventPersonUpdated},
			{"attaching it again", func() error { _, err := rs.AddPersonTags(ctx, acc, p.ID, []string{tags[0]}, w()); return err }, ""},
			{"removing it", func() error { return rs.RemovePersonTag(ctx, acc, p.ID, tags[0], w()) }, domain.EventPersonUpdated},
			{"a patch", func() error {
				_, err := rs.UpdatePerson(ctx, acc, p.ID, domain.PersonUpdate{FirstName: domain.Opt[string]{Set: true, Value: "X"}}, w())
				return err
			}, domain.EventPersonUpdated},
			{"an upsert that changes", func() error {
				_, _, err := rs.UpsertPerson(ctx, acc, domain.PersonUpsert{ExternalID: domain.Opt[string]{Set: true, Value: "x"},
					LastName: domain.Opt[string]{Set: true, Value: "Y"}}, w())
				return err
			}, domain.EventPersonUpdated},
		}
		for _, s := range steps {
			now = now.Add(time.Hour)
			if err := s.write(); err != nil {
				t.Fatalf("%s: %v", s.what, err)
			}
			wantBurst(s.what, s.event)
			closeBurst()
		}
		got, err := rs.GetPerson(ctx, acc, p.ID)
		if err != nil || !got.DateLastSeen.Equal(now) {
			t.Fatalf("last seen %v, want %v (%v)", got.DateLastSeen, now, err)
		}
	})
}

func strRef(s string) *string { return &s }
