package postgres_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/store/postgres"
	"github.com/pds-dev/pds/internal/store/storetest"
	"github.com/pds-dev/pds/internal/testenv"
)

// TestPersonSeenFollowsPersons: person_seen, which orders the window lists
// (migration 00200), holds exactly each person's account, id and last-seen
// time after every kind of write of persons: creates, matched upserts,
// appends alone and in the appender's batches, an import that creates and
// matches, an erasure; and after the migration runs again on that data.
// No index of persons holds last_seen_at, and its pages keep room, so that
// those writes can update a person in place. The triggers keep no state
// beyond their statement, so all of it holds through a transaction-mode
// pooler as directly.
func TestPersonSeenFollowsPersons(t *testing.T) {
	t.Parallel()
	testenv.ForEachPostgres(t, func(t *testing.T, eng testenv.Engine) {
		personSeenFollowsPersons(t, eng)
	})
}

func personSeenFollowsPersons(t *testing.T, eng testenv.Engine) {
	url := eng.NewDatabase(t)
	st := eng.Open(t, url)
	admin, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ctx := context.Background()
	at := storetest.Epoch
	write := func() store.Write {
		at = at.Add(time.Second)
		return store.Write{Now: at, Window: time.Minute}
	}
	acc, other := storetest.NewAccount(t, st), storetest.NewAccount(t, st)
	ext := func(i int) domain.Opt[string] { return domain.Opt[string]{Set: true, Value: fmt.Sprintf("ext-%d", i)} }
	var ids []string
	for i := range 12 {
		p, _, err := st.UpsertPerson(ctx, acc, domain.PersonUpsert{ExternalID: ext(i)}, write())
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, p.ID)
	}
	if _, _, err := st.UpsertPerson(ctx, other, domain.PersonUpsert{ExternalID: ext(0)}, write()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.UpsertPerson(ctx, acc, domain.PersonUpsert{ExternalID: ext(3), FirstName: domain.Opt[string]{Set: true, Value: "Ada"}}, write()); err != nil {
		t.Fatal(err)
	}
	// Appends together, each at a time of its own, share the appender's
	// statements; the last of them moves each person.
	var wg sync.WaitGroup
	base := write().Now
	for i := range 48 {
		wg.Go(func() {
			e := ext(i % 8).Value
			w := store.Write{Now: base.Add(time.Duration(i) * time.Millisecond), Window: time.Minute}
			if _, _, err := st.AppendBreadcrumb(ctx, acc, domain.BreadcrumbInput{Flavor: "web", ExternalID: &e}, w); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	lines := func(yield func(store.PersonImport, error) bool) {
		for i, n := range []int{5, 40, 41} {
			if !yield(store.PersonImport{Line: i + 1, Person: domain.PersonUpsert{ExternalID: ext(n)}}, nil) {
				return
			}
		}
	}
	if _, err := st.ImportPersons(ctx, acc, lines, write()); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ErasePerson(ctx, acc, ids[7], domain.EraseRequest{KeyID: "key_test"}, write()); err != nil {
		t.Fatal(err)
	}
	wantSeenAsPersons(t, admin, 14)
	if err := postgres.RerunMigration(ctx, url, 200); err != nil {
		t.Fatal(err)
	}
	wantSeenAsPersons(t, admin, 14)
	wantPersonsUpdatableInPlace(t, admin)
}

// wantPersonsUpdatableInPlace fails if an index of persons holds
// last_seen_at or its pages keep no room: either would make every move of
// a last-seen time a new row version with an entry in each index.
func wantPersonsUpdatableInPlace(t *testing.T, admin *sql.DB) {
	t.Helper()
	var lastSeenIndexes []string
	rows, err := admin.Query(`SELECT i.indexrelid::regclass::text FROM pg_index i
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
		WHERE i.indrelid = 'persons'::regclass AND a.attname = 'last_seen_at'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		lastSeenIndexes = append(lastSeenIndexes, name)
	}
	if err := rows.Err(); err != nil || len(lastSeenIndexes) > 0 {
		t.Errorf("indexes of persons holding last_seen_at: %v (%v); an update of it could not stay on its page", lastSeenIndexes, err)
	}
	var options string
	if err := admin.QueryRow(`SELECT COALESCE(array_to_string(reloptions, ','), '') FROM pg_class WHERE oid = 'persons'::regclass`).
		Scan(&options); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(strings.Split(options, ","), "fillfactor=85") {
		t.Errorf("persons options %v: its pages keep no room for an update", options)
	}
}

// wantSeenAsPersons fails unless person_seen and persons hold the same
// persons, n of them, with the same account and last-seen time.
func wantSeenAsPersons(t *testing.T, admin *sql.DB, n int) {
	t.Helper()
	var persons, seen, differ int
	if err := admin.QueryRow(`SELECT (SELECT count(*) FROM persons), (SELECT count(*) FROM person_seen),
		(SELECT count(*) FROM persons p FULL JOIN person_seen s ON s.id = p.id
			WHERE p.id IS NULL OR s.id IS NULL OR s.account_id <> p.account_id OR s.last_seen_at <> p.last_seen_at)`).
		Scan(&persons, &seen, &differ); err != nil {
		t.Fatal(err)
	}
	if persons != n || seen != n || differ != 0 {
		t.Fatalf("persons %d, person_seen %d, %d differ; want %d and %d, none differing", persons, seen, differ, n, n)
	}
}
