package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/testenv"
)

// TestConcurrentCreatesKeepEveryRule: many upserts at once, so that
// PostgreSQL's creator runs them in shared statements: new persons, persons
// that match one already stored, and several upserts of one new
// external_id (two of which may share a batch, which then fails unique
// and runs call by call). Each new identifier makes exactly one person,
// every upsert of it answers that person, matches find the stored one, and
// every person created has its outbox row (its person.created event).
func TestConcurrentCreatesKeepEveryRule(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rs := openCounting(t, eng)
		acc, _ := rs.seedAccount(t, 10)
		ctx := context.Background()
		w := store.Write{Now: time.Now().UTC(), Window: time.Minute}
		text := func(v string) domain.Opt[string] { return domain.Opt[string]{Set: true, Value: v} }
		for round := range 3 {
			const callers = 96
			type result struct {
				ext     string
				id      string
				created bool
			}
			results := make([]result, callers)
			var wg sync.WaitGroup
			for i := range callers {
				var ext string
				switch i % 3 {
				case 0:
					ext = fmt.Sprintf("ext-%d", i%10) // seeded
				case 1:
					ext = fmt.Sprintf("new-%d-%d", round, i)
				default:
					ext = fmt.Sprintf("dup-%d-%d", round, i%8)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					p, created, err := rs.UpsertPerson(ctx, acc, domain.PersonUpsert{ExternalID: text(ext), FirstName: text("F")}, w)
					if err != nil {
						t.Errorf("upsert %s: %v", ext, err)
						return
					}
					results[i] = result{ext, p.ID, created}
				}()
			}
			wg.Wait()
			if t.Failed() {
				return
			}
			byExt := map[string]string{}
			createdOf := map[string]int{}
			for _, r := range results {
				if id, ok := byExt[r.ext]; ok && id != r.id {
					t.Fatalf("round %d: %s answered as %s and as %s", round, r.ext, id, r.id)
				}
				byExt[r.ext] = r.id
				if r.created {
					createdOf[r.ext]++
				}
			}
			for ext, id := range byExt {
				want := 1
				if strings.HasPrefix(ext, "ext-") {
					want = 0
				}
				if createdOf[ext] != want {
					t.Fatalf("round %d: %s created %d times, want %d", round, ext, createdOf[ext], want)
				}
				var n int
				if err := rs.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM persons WHERE account_id = $1 AND external_id = $2`, acc, ext).Scan(&n); err != nil || n != 1 {
					t.Fatalf("round %d: %d persons hold %s (%v)", round, n, ext, err)
				}
				if want == 1 {
					if err := rs.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM bursts WHERE person_id = $1 AND event = $2`, id, domain.EventPersonCreated).Scan(&n); err != nil || n != 1 {
						t.Fatalf("round %d: %s has %d person.created outbox rows (%v)", round, ext, n, err)
					}
				}
			}
		}
	})
}

// TestCreateBatchRunsWhileACallerWaits: the creator's shared statement is
// cancelled once none of its callers waits, so a batch stalled on the
// server cannot hold up every create queued behind it; while one waits, it
// runs. (PostgreSQL: SQLite creates in the caller's transaction.)
func TestCreateBatchRunsWhileACallerWaits(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		if eng.Name != "postgres" {
			t.Skip("only PostgreSQL creates persons in batches")
		}
		rs := openCounting(t, eng)
		acc, _ := rs.seedAccount(t, 1)
		stored := func(ext string) bool {
			var n int
			if err := rs.db.QueryRow(`SELECT count(*) FROM persons WHERE account_id = $1 AND external_id = $2`, acc, ext).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n == 1
		}
		gone, cancel := context.WithCancel(context.Background())
		cancel()
		for i, err := range rs.CreateTogether(gone, acc, []string{"gone-1", "gone-2"}) {
			if !errors.Is(err, context.Canceled) {
				t.Errorf("call %d of a batch nobody waits for: %v, want context.Canceled", i, err)
			}
		}
		if stored("gone-1") || stored("gone-2") {
			t.Error("a batch nobody waited for created its persons")
		}
		for i, err := range rs.CreateTogether(context.Background(), acc, []string{"kept-1", "kept-2"}) {
			if err != nil {
				t.Errorf("call %d: %v", i, err)
			}
		}
		if !stored("kept-1") || !stored("kept-2") {
			t.Error("a batch its callers waited for did not create its persons")
		}
	})
}
