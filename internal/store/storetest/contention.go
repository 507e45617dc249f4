package storetest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// Contention: writers that meet on one person are the normal case (a sync
// job and a tracker at once). Every write must be answered as if it ran
// alone: a deadlock or a serialization failure between them is the store's
// to retry, never the caller's error.
const (
	contentionRounds  = 40
	contentionWriters = 16
	// contentionKinds is how many kinds of write a round sends, each twice:
	// the second of a pair crosses the first (other order, other person).
	contentionKinds = 8
	// burstLease is how long the closer's claims hold a burst.
	burstLease = time.Minute
)

// contentionWrite is one kind of write the rounds send, by name.
type contentionWrite struct {
	name string
	run  func(ctx context.Context, round, writer int) error
}

func testContention(t *testing.T, newStore NewStore) {
	st := newStore(t)
	c := newPersonCase(t, st)
	ctx := context.Background()
	sub := newWebhook(t, st, c.acc)
	c.field("Person", "plan", "str")
	tagA, tagB, tagC := c.tag("alpha"), c.tag("beta"), c.tag("gamma")
	p, _ := c.upsert(domain.PersonUpsert{Email: setText("ada@example.com"), ExternalID: setText("crm-ada")})
	q, _ := c.upsert(domain.PersonUpsert{Email: setText("bob@example.com"), ExternalID: setText("crm-bob")})

	// Each round happens a window and a second after the last, so that its
	// changes make a burst of their own: every round is one delivery per
	// person, and the closer below delivers the last round's while this
	// one writes.
	roundTime := func(r int) time.Time { return Epoch.Add(time.Duration(r+1) * (personWindow + time.Second)) }
	write := func(r int) store.Write { return store.Write{Now: roundTime(r), Window: personWindow} }
	str := func(s string) *string { return &s }

	writes := []contentionWrite{
		{"attach a, b", func(ctx context.Context, r, _ int) error {
			_, err := st.AddPersonTags(ctx, c.acc, p.ID, []string{tagA, tagB}, write(r))
			return err
		}},
		{"attach b, a", func(ctx context.Context, r, _ int) error {
			_, err := st.AddPersonTags(ctx, c.acc, p.ID, []string{tagB, tagA}, write(r))
			return err
		}},
		{"detach c", func(ctx context.Context, r, _ int) error {
			return st.RemovePersonTag(ctx, c.acc, p.ID, tagC, write(r))
		}},
		{"patch", func(ctx context.Context, r, w int) error {
			_, err := st.UpdatePerson(ctx, c.acc, p.ID, domain.PersonUpdate{
				FirstName:    setText(fmt.Sprintf("first %d.%d", r, w)),
				CustomFields: fieldValues(map[string]any{"plan": fmt.Sprintf("plan %d.%d", r, w)})}, write(r))
			return err
		}},
		{"upsert by email", func(ctx context.Context, r, w int) error {
			_, _, err := st.UpsertPerson(ctx, c.acc, domain.PersonUpsert{Email: setText("ada@example.com"),
				LastName: setText(fmt.Sprintf("last %d.%d", r, w))}, write(r))
			return err
		}},
		{"breadcrumb by email", func(ctx context.Context, r, w int) error {
			email := "ada@example.com"
			if (w/contentionKinds)%2 == 1 {
				email = "bob@example.com"
			}
			_, _, err := st.AppendBreadcrumb(ctx, c.acc, domain.BreadcrumbInput{Flavor: "page_view", Email: &email}, write(r))
			return err
		}},
		{"breadcrumb by id", func(ctx context.Context, r, w int) error {
			id := q.ID
			if (w/contentionKinds)%2 == 1 {
				id = p.ID
			}
			_, _, err := st.AppendBreadcrumb(ctx, c.acc, domain.BreadcrumbInput{Flavor: "email_view", PersonID: str(id),
				ID: fmt.Sprintf("%s-%d-%d", id, r, w)}, write(r))
			return err
		}},
		{"batch crossing", func(ctx context.Context, r, w int) error {
			items := []domain.PersonUpsert{
				{Email: setText("ada@example.com"), Phone: setText(fmt.Sprintf("+1 %d.%d", r, w))},
				{Email: setText("bob@example.com"), LastName: setText(fmt.Sprintf("last %d.%d", r, w))},
			}
			if (w/contentionKinds)%2 == 1 {
				items[0], items[1] = items[1], items[0]
			}
			results, err := st.UpsertPersons(ctx, c.acc, items, write(r))
			for _, res := range results {
				if err == nil && res.Err != nil {
					err = res.Err
				}
			}
			return err
		}},
	}
	if len(writes) != contentionKinds {
		t.Fatalf("%d kinds of write, want %d", len(writes), contentionKinds)
	}

	// The closer does what the webhook worker does while the writers run:
	// it claims the bursts that are due and closes them.
	var closerErr error
	closeDue := func(now time.Time) error {
		for {
			claimed, err := st.ClaimBursts(ctx, now, burstLease, 10)
			if err != nil || len(claimed) == 0 {
				return err
			}
			if _, err := st.CloseBursts(ctx, claimed, func(b domain.Burst, active []domain.Webhook) ([]domain.DeliveryJob, error) {
				ds, err := everySubscription(b, now)(active)
				jobs := make([]domain.DeliveryJob, len(ds))
				for i, d := range ds {
					jobs[i] = domain.DeliveryJob{Delivery: d}
				}
				return jobs, err
			}); err != nil {
				return err
			}
		}
	}

	failures := map[string][]string{}
	var mu sync.Mutex
	sent := 0
	for r := range contentionRounds {
		if err := st.RemovePersonTag(ctx, c.acc, p.ID, tagA, write(r)); err != nil {
			t.Fatalf("round %d: detach a: %v", r, err)
		}
		if _, err := st.AddPersonTags(ctx, c.acc, p.ID, []string{tagC}, write(r)); err != nil {
			t.Fatalf("round %d: attach c: %v", r, err)
		}
		var wg sync.WaitGroup
		closing := make(chan error, 1)
		go func() { closing <- closeDue(roundTime(r)) }()
		for w := range contentionWriters {
			kind := writes[w%len(writes)]
			sent++
			wg.Go(func() {
				if err := kind.run(ctx, r, w); err != nil {
					mu.Lock()
					failures[kind.name] = append(failures[kind.name], fmt.Sprintf("round %d writer %d: %v", r, w, err))
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		err := <-closing
		if err == nil {
			// A burst a writer held while the closer ran was passed over,
			// still claimed: as a worker would, once its lease has run out.
			err = closeDue(roundTime(r).Add(burstLease + time.Second))
		}
		if err != nil && closerErr == nil {
			closerErr = fmt.Errorf("round %d: %w", r, err)
		}
	}
	if len(failures) > 0 {
		var b strings.Builder
		n := 0
		for _, name := range slices.Sorted(maps.Keys(failures)) {
			n += len(failures[name])
			fmt.Fprintf(&b, "\n  %s: %d, first: %s", name, len(failures[name]), failures[name][0])
		}
		t.Errorf("%d of %d writes failed:%s", n, sent, b.String())
	}
	if closerErr != nil {
		t.Errorf("closing bursts alongside the writers: %v", closerErr)
	}
	if r, ok := st.(interface{ Retries() map[string]uint64 }); ok {
		t.Logf("%d writes; transactions run again after a conflict: %v", sent, r.Retries())
	}
	last := roundTime(contentionRounds - 1)
	c.setNow(last)

	t.Run("each tag is held once, and the tag filters agree", func(t *testing.T) {
		got := c.get(p.ID)
		tags := slices.Clone(got.TagIDs)
		sort.Strings(tags)
		want := []string{tagA, tagB}
		sort.Strings(want)
		if !slices.Equal(tags, want) {
			t.Fatalf("tags of the person: %v, want %v (a and b once, c detached)", got.TagIDs, want)
		}
		for _, tc := range []struct {
			tags []string
			want int
		}{{[]string{tagA, tagB}, 1}, {[]string{tagA}, 1}, {[]string{tagC}, 0}} {
			_, total, err := st.ListPersons(ctx, c.acc, domain.PersonSelection{Mode: domain.PersonWindow, Since: last, TagIDs: tc.tags},
				domain.PageRequest{Page: 1, Size: 10})
			if err != nil || total != tc.want {
				t.Errorf("persons seen since the last round holding %v: %d, %v; want %d", tc.tags, total, err, tc.want)
			}
		}
	})

	t.Run("counts and totals are exact", func(t *testing.T) {
		perRound := func(name string) int {
			n := 0
			for w := range contentionWriters {
				if writes[w%len(writes)].name == name {
					n++
				}
			}
			return n
		}
		crumbs := contentionRounds * (perRound("breadcrumb by email") + perRound("breadcrumb by id"))
		_, total, err := st.ListBreadcrumbs(ctx, c.acc, domain.BreadcrumbFilter{}, domain.PageRequest{Page: 1, Size: 1})
		if err != nil || total != crumbs {
			t.Errorf("breadcrumbs listed: %d, %v; want %d", total, err, crumbs)
		}
		forP, forQ := 0, 0
		for _, id := range []string{p.ID, q.ID} {
			_, n, err := st.ListBreadcrumbs(ctx, c.acc, domain.BreadcrumbFilter{PersonID: &id}, domain.PageRequest{Page: 1, Size: 1})
			if err != nil {
				t.Fatal(err)
			}
			if id == p.ID {
				forP = n
			} else {
				forQ = n
			}
		}
		if forP+forQ != crumbs || forP != crumbs/2 {
			t.Errorf("breadcrumbs of the two persons: %d and %d; want %d each", forP, forQ, crumbs/2)
		}
		counts, err := st.AccountCounts(ctx, c.acc)
		if err != nil || counts.Persons != 2 || counts.Breadcrumbs != crumbs {
			t.Errorf("account counts: %+v, %v; want 2 persons and %d breadcrumbs", counts, err, crumbs)
		}
		_, seen, err := st.ListPersons(ctx, c.acc, domain.PersonSelection{Mode: domain.PersonWindow, Since: last},
			domain.PageRequest{Page: 1, Size: 10})
		if err != nil || seen != 2 {
			t.Errorf("persons seen in the last round: %d, %v; want 2", seen, err)
		}
	})

	t.Run("every round's change is delivered once", func(t *testing.T) {
		if err := closeDue(last.Add(personWindow)); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{p.ID, q.ID} {
			if b := c.burst(id); b != nil {
				t.Errorf("a burst of %s is still open after the last close: %+v", id, b)
			}
			ds, n, err := st.ListDeliveries(ctx, c.acc, sub.ID, domain.DeliveryFilter{PersonID: id}, domain.PageRequest{Page: 1, Size: 100})
			if err != nil {
				t.Fatal(err)
			}
			// The creation, then one burst per round.
			created := 0
			for _, d := range ds {
				if d.Event == domain.EventPersonCreated {
					created++
				}
			}
			if n != contentionRounds+1 || created != 1 {
				t.Errorf("deliveries of %s: %d (%d person.created); want %d, one person.created", id, n, created, contentionRounds+1)
			}
		}
	})
}
