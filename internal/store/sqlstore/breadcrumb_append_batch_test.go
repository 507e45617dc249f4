package sqlstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/testenv"
)

// TestAppendBatchKeepsEveryRule runs breadcrumbs of two accounts as one
// batch of PostgreSQL's appender: each goes to its own account's holder of
// its one identifier (an email in any case included), one whose identifier
// nobody holds writes nothing and answers no holder (its caller then
// creates the person in a transaction), two for one person both land and
// the person and its tag links are seen at the later time, and the
// breadcrumbs' counts (timelines) take every breadcrumb stored.
func TestAppendBatchKeepsEveryRule(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		if eng.Name != "postgres" {
			t.Skip("only PostgreSQL appends breadcrumbs in batches")
		}
		rs := openCounting(t, eng)
		acc, _ := rs.seedAccount(t, 4)
		other, _ := rs.seedAccount(t, 4)
		ctx := context.Background()
		at := seedEpoch.Add(time.Hour)
		occurred := seedEpoch.Add(-time.Hour)
		totalOf := func(account string) int {
			_, total, err := rs.ListBreadcrumbs(ctx, account, domain.BreadcrumbFilter{}, domain.PageRequest{Page: 1, Size: 1})
			if err != nil {
				t.Fatal(err)
			}
			return total
		}
		accBefore, otherBefore := totalOf(acc), totalOf(other)
		cases := []struct {
			account string
			in      domain.BreadcrumbInput
			at      time.Time
			holder  string
		}{
			{acc, domain.BreadcrumbInput{Flavor: "web", ExternalID: new("ext-1")}, at, seededPerson(acc, 1)},
			{acc, domain.BreadcrumbInput{Flavor: "mail", Email: new("P2@Seed.TEST"), OccurredAt: &occurred}, at, seededPerson(acc, 2)},
			{acc, domain.BreadcrumbInput{Flavor: "web", ExternalID: new("ext-nobody")}, at, ""},
			{acc, domain.BreadcrumbInput{Flavor: "web", ExternalID: new("ext-3")}, at.Add(2 * time.Minute), seededPerson(acc, 3)},
			{acc, domain.BreadcrumbInput{Flavor: "app", ExternalID: new("ext-3")}, at.Add(time.Minute), seededPerson(acc, 3)},
			{other, domain.BreadcrumbInput{Flavor: "web", ExternalID: new("ext-1")}, at, seededPerson(other, 1)},
		}
		accounts, ins, times := make([]string, len(cases)), make([]domain.BreadcrumbInput, len(cases)), make([]time.Time, len(cases))
		for i, c := range cases {
			accounts[i], ins[i], times[i] = c.account, c.in, c.at
		}
		holders, errs := rs.AppendTogether(ctx, accounts, ins, times)
		for i, c := range cases {
			if errs[i] != nil || holders[i] != c.holder {
				t.Errorf("call %d: holder %q (%v), want %q", i, holders[i], errs[i], c.holder)
			}
		}
		for _, c := range []struct {
			account, person string
			seen            time.Time
			breadcrumbs     int
		}{
			{acc, seededPerson(acc, 1), at, 1},
			{acc, seededPerson(acc, 2), at, 1},
			{acc, seededPerson(acc, 3), at.Add(2 * time.Minute), 2},
			{other, seededPerson(other, 1), at, 1},
			{other, seededPerson(other, 2), seedEpoch.Add(2 * time.Second), 0},
		} {
			p, err := rs.GetPerson(ctx, c.account, c.person)
			if err != nil || !p.DateLastSeen.Equal(c.seen) {
				t.Errorf("%s: person %+v (%v), want seen at %s", c.person, p, err, c.seen)
			}
			var links, stale int
			if err := rs.db.QueryRowContext(ctx, `SELECT COUNT(*), COUNT(*) FILTER (WHERE last_seen_at <> $2) FROM person_tags WHERE person_id = $1`,
				c.person, c.seen.UnixMilli()).Scan(&links, &stale); err != nil || links == 0 || stale != 0 {
				t.Errorf("%s: %d of its %d tag links not seen at %s (%v)", c.person, stale, links, c.seen, err)
			}
			var n int
			if err := rs.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM breadcrumbs WHERE account_id = $1 AND person_id = $2 AND created_at >= $3`,
				c.account, c.person, at.UnixMilli()).Scan(&n); err != nil || n != c.breadcrumbs {
				t.Errorf("%s: %d new breadcrumbs (%v), want %d", c.person, n, err, c.breadcrumbs)
			}
		}
		var nobody int
		if err := rs.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM breadcrumbs WHERE external_id = 'ext-nobody'`).Scan(&nobody); err != nil || nobody != 0 {
			t.Errorf("%d breadcrumbs for an identifier nobody holds (%v)", nobody, err)
		}
		if got := totalOf(acc) - accBefore; got != 4 {
			t.Errorf("account's breadcrumb total grew by %d, want 4", got)
		}
		if got := totalOf(other) - otherBefore; got != 1 {
			t.Errorf("other account's breadcrumb total grew by %d, want 1", got)
		}
	})
}

// TestAppendBatchWaitsNoLongerThanItsLockTimeout: a batch whose person
// another transaction holds gives up at its lock timeout, and its calls
// run alone, waiting as the statement of each would have without the
// batch, and land once the holder commits.
func TestAppendBatchWaitsNoLongerThanItsLockTimeout(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		if eng.Name != "postgres" {
			t.Skip("only PostgreSQL appends breadcrumbs in batches")
		}
		rs := openCounting(t, eng)
		acc, _ := rs.seedAccount(t, 3)
		ctx := context.Background()
		holding, err := rs.db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer holding.Rollback()
		if _, err := holding.ExecContext(ctx, `SELECT 1 FROM persons WHERE id = $1 FOR UPDATE`, seededPerson(acc, 1)); err != nil {
			t.Fatal(err)
		}
		at := seedEpoch.Add(time.Hour)
		var (
			holders []string
			errs    []error
			done    = make(chan struct{})
		)
		go func() {
			defer close(done)
			holders, errs = rs.AppendTogether(ctx, []string{acc, acc},
				[]domain.BreadcrumbInput{{Flavor: "web", ExternalID: new("ext-1")}, {Flavor: "web", ExternalID: new("ext-2")}}, []time.Time{at, at})
		}()
		// The batch's statement starts WITH i, a call's own WITH h: wait
		// until a call alone waits for the lock.
		for alone := 0; alone == 0; {
			select {
			case <-done:
				t.Fatal("the batch answered while its person was held")
			default:
			}
			if err := rs.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM pg_stat_activity
				WHERE wait_event_type = 'Lock' AND query LIKE 'WITH h AS%'`).Scan(&alone); err != nil {
				t.Fatal(err)
			}
		}
		if err := holding.Commit(); err != nil {
			t.Fatal(err)
		}
		<-done
		for i, want := range []string{seededPerson(acc, 1), seededPerson(acc, 2)} {
			if errs[i] != nil || holders[i] != want {
				t.Errorf("call %d: holder %q (%v), want %q", i, holders[i], errs[i], want)
			}
		}
	})
}

// TestConcurrentAppendsKeepEveryRule: many appends at once, so that
// PostgreSQL's appender runs them in shared statements, some to one
// person, some to persons they create: every breadcrumb is stored once,
// for the person its identifier names, and each identifier nobody held
// makes exactly one person.
func TestConcurrentAppendsKeepEveryRule(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rs := openCounting(t, eng)
		acc, _ := rs.seedAccount(t, 8)
		ctx := context.Background()
		const callers = 96
		personOf := make([]string, callers)
		exts := make([]string, callers)
		var wg sync.WaitGroup
		for i := range callers {
			exts[i] = fmt.Sprintf("ext-%d", i%8) // seeded
			if i%4 == 3 {
				exts[i] = fmt.Sprintf("new-%d", i%5)
			}
			wg.Go(func() {
				w := store.Write{Now: seedEpoch.Add(time.Hour + time.Duration(i)*time.Millisecond), Window: time.Minute}
				b, _, err := rs.AppendBreadcrumb(ctx, acc, domain.BreadcrumbInput{Flavor: "web", ExternalID: &exts[i]}, w)
				if err != nil {
					t.Errorf("append %s: %v", exts[i], err)
					return
				}
				personOf[i] = b.PersonID
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		holderOf := map[string]string{}
		for i, ext := range exts {
			if h, ok := holderOf[ext]; ok && h != personOf[i] {
				t.Fatalf("%s went to %s and %s", ext, h, personOf[i])
			}
			holderOf[ext] = personOf[i]
			if i%4 != 3 && personOf[i] != seededPerson(acc, i%8) {
				t.Errorf("append %d: person %s, want %s", i, personOf[i], seededPerson(acc, i%8))
			}
		}
		for ext, person := range holderOf {
			var persons, crumbs, want int
			if err := rs.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM persons WHERE account_id = $1 AND external_id = $2`, acc, ext).Scan(&persons); err != nil || persons != 1 {
				t.Errorf("%d persons hold %s (%v)", persons, ext, err)
			}
			for _, e := range exts {
				if e == ext {
					want++
				}
			}
			if err := rs.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM breadcrumbs WHERE account_id = $1 AND person_id = $2 AND external_id = $3`,
				acc, person, ext).Scan(&crumbs); err != nil || crumbs != want {
				t.Errorf("%s: %d breadcrumbs (%v), want %d", ext, crumbs, err, want)
			}
		}
	})
}
