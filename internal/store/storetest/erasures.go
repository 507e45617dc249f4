package storetest

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// erasedCrumbs is more breadcrumbs than SQLite erases in one chunk
// (sqlite.Dialect.EraseChunk), so the chunked path is the one tried.
const erasedCrumbs = 1100

// crumbsFor appends n breadcrumbs to the person, a few writers at once.
func (c *personCase) crumbsFor(personID string, n int) {
	c.t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				_, _, err := c.st.AppendBreadcrumb(context.Background(), c.acc, domain.BreadcrumbInput{
					Flavor: []string{"page_view", "click"}[i%2], PersonID: &personID,
					OccurredAt: ptrTime(c.now().Add(time.Duration(i) * time.Millisecond))}, c.write())
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		c.t.Fatalf("append breadcrumb: %v", err)
	}
}

func (c *personCase) crumbTotalOf(f domain.BreadcrumbFilter) int {
	c.t.Helper()
	_, total, err := c.st.ListBreadcrumbs(context.Background(), c.acc, f, domain.PageRequest{Page: 1, Size: 10})
	if err != nil {
		c.t.Fatal(err)
	}
	return total
}

func (c *personCase) windowTotal(tagIDs ...string) (int, []string) {
	c.t.Helper()
	ps, total, err := c.st.ListPersons(context.Background(), c.acc, domain.PersonSelection{Mode: domain.PersonWindow,
		Since: c.now().Add(-24 * time.Hour), TagIDs: tagIDs}, domain.PageRequest{Page: 1, Size: 100})
	if err != nil {
		c.t.Fatal(err)
	}
	var ids []string
	for _, p := range ps {
		ids = append(ids, p.ID)
	}
	return total, ids
}

func (c *personCase) erase(id string, suppress bool) domain.Erasure {
	c.t.Helper()
	e, err := c.st.ErasePerson(context.Background(), c.acc, id, domain.EraseRequest{Suppress: suppress, KeyID: "key_eraser"}, c.write())
	if err != nil {
		c.t.Fatalf("erase %s: %v", id, err)
	}
	return e
}

func testErasure(t *testing.T, newStore NewStore) {
	ctx := context.Background()
	st := newStore(t)
	c := newPersonCase(t, st)
	tag := c.tag("vip")
	c.field("Person", "plan", "str")
	told := newWebhook(t, st, c.acc, domain.EventPersonCreated, domain.EventPersonDeleted)
	untold := newWebhook(t, st, c.acc, domain.EventPersonCreated, domain.EventPersonUpdated)

	// The person, delivered once (a succeeded attempt with its headers),
	// then changed again (a burst still open).
	gone, _ := c.upsert(domain.PersonUpsert{Email: setText("Erase.Me@Example.com"), ExternalID: setText("crm-erase"),
		FID: setText("f-erase"), Phone: setText("+1555000111"), FirstName: setText("Zebulon"),
		CustomFields: fieldValues(map[string]any{"plan": "gold"})})
	if _, err := st.AddPersonTags(ctx, c.acc, gone.ID, []string{tag}, c.write()); err != nil {
		t.Fatal(err)
	}
	kept, _ := c.upsert(domain.PersonUpsert{Email: setText("keep@example.com")})
	if _, err := st.AddPersonTags(ctx, c.acc, kept.ID, []string{tag}, c.write()); err != nil {
		t.Fatal(err)
	}
	c.advance(burstWindow)
	claimed, err := st.ClaimBursts(ctx, c.now(), time.Minute, 10)
	if err != nil || len(claimed) != 2 {
		t.Fatalf("claim bursts: %+v, %v", claimed, err)
	}
	for _, b := range claimed {
		build := everySubscription(b, c.now())
		if _, err := st.CloseBurst(ctx, b, func(ws []domain.Webhook) ([]domain.Delivery, error) {
			ds, err := build(ws)
			for i := range ds {
				ds[i].Body = []byte(`{"email":"erase.me@example.com","person":"` + b.PersonID + `"}`)
			}
			return ds, err
		}); err != nil {
			t.Fatal(err)
		}
	}
	jobs, err := st.ClaimDeliveries(ctx, c.now(), time.Minute, 10)
	if err != nil || len(jobs) != 4 {
		t.Fatalf("claim deliveries: %d, %v", len(jobs), err)
	}
	var delivered domain.Delivery
	for _, j := range jobs {
		if j.Delivery.PersonID == gone.ID && j.Delivery.WebhookID == told.ID {
			delivered = j.Delivery
			code := 200
			if err := st.FinishAttempt(ctx, j, store.AttemptResult{Attempt: domain.DeliveryAttempt{AttemptedAt: c.now(),
				StatusCode: &code, DurationMS: 3, RequestHeaders: map[string]string{"Service-Event": "person.created"}},
				Status: domain.DeliverySucceeded}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := st.ReleaseDeliveries(ctx, slices.DeleteFunc(jobs, func(j domain.DeliveryJob) bool { return j.Delivery.ID == delivered.ID })); err != nil {
		t.Fatal(err)
	}
	c.advance(time.Minute)
	c.crumbsFor(gone.ID, erasedCrumbs)
	c.crumbsFor(kept.ID, 3)
	changePerson(t, st, c.acc, gone.ID, c.now())

	before, err := st.AccountCounts(ctx, c.acc)
	if err != nil {
		t.Fatal(err)
	}
	if before.Persons != 2 || before.Breadcrumbs != erasedCrumbs+3 {
		t.Fatalf("counts before: %+v", before)
	}
	other := c.other()
	if _, err := st.ErasePerson(ctx, other.acc, gone.ID, domain.EraseRequest{KeyID: "k"}, other.write()); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("erase from another account: %v, want not found", err)
	}
	if _, err := st.GetPerson(ctx, c.acc, gone.ID); err != nil {
		t.Fatalf("another account's erasure touched the person: %v", err)
	}

	c.advance(time.Minute)
	rec := c.erase(gone.ID, false)
	if rec.PersonID != gone.ID || rec.KeyID != "key_eraser" || !rec.At.Equal(c.now()) || rec.Suppressed || rec.ID == "" {
		t.Fatalf("erasure record %+v", rec)
	}

	t.Run("the person and everything held for it is gone", func(t *testing.T) {
		c := c.in(t)
		if _, err := st.GetPerson(ctx, c.acc, gone.ID); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("get erased person: %v", err)
		}
		if _, err := st.ErasePerson(ctx, c.acc, gone.ID, domain.EraseRequest{}, c.write()); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("erase twice: %v, want not found", err)
		}
		if n := c.crumbTotalOf(domain.BreadcrumbFilter{PersonID: &gone.ID}); n != 0 {
			t.Fatalf("%d breadcrumbs of the erased person left", n)
		}
		if c.burst(gone.ID) != nil {
			t.Fatal("the erased person's burst is still open")
		}
		after, err := st.AccountCounts(ctx, c.acc)
		if err != nil || after.Persons != 1 || after.Breadcrumbs != 3 {
			t.Fatalf("counts after: %+v, %v", after, err)
		}
		for _, flavor := range []string{"page_view", "click"} {
			if n := c.crumbTotalOf(domain.BreadcrumbFilter{Flavor: &flavor}); n != len(slices.DeleteFunc([]int{0, 1, 2}, func(i int) bool { return []string{"page_view", "click"}[i%2] != flavor })) {
				t.Fatalf("%s breadcrumbs: %d", flavor, n)
			}
		}
		if total, ids := c.windowTotal(); total != 1 || !slices.Equal(ids, []string{kept.ID}) {
			t.Fatalf("window: %d %v", total, ids)
		}
		if total, ids := c.windowTotal(tag); total != 1 || !slices.Equal(ids, []string{kept.ID}) {
			t.Fatalf("tag window: %d %v", total, ids)
		}
		exported, err := st.ExportPersons(ctx, c.acc, domain.PersonExport{}, 10)
		if err != nil || len(exported) != 1 || exported[0].ID != kept.ID {
			t.Fatalf("export: %v, %v", exported, err)
		}
	})

	t.Run("its identifiers are free again", func(t *testing.T) {
		c := c.in(t)
		p, created := c.upsert(domain.PersonUpsert{Email: setText("erase.me@example.com"), ExternalID: setText("crm-erase"), FID: setText("f-erase")})
		if !created || p.ID == gone.ID || p.FirstName != nil {
			t.Fatalf("upsert after erasure: %+v created %v", p, created)
		}
		if len(p.TagIDs) != 0 || len(p.CustomFields) != 0 {
			t.Fatalf("the fresh person inherited %v %v", p.TagIDs, p.CustomFields)
		}
	})

	t.Run("past deliveries keep their outcome, not the person", func(t *testing.T) {
		d, attempts, err := st.GetDelivery(ctx, c.acc, told.ID, delivered.ID)
		if err != nil {
			t.Fatal(err)
		}
		if d.Status != domain.DeliverySucceeded || d.LastStatusCode == nil || *d.LastStatusCode != 200 || len(attempts) != 1 ||
			*attempts[0].StatusCode != 200 {
			t.Fatalf("delivered: %+v %+v", d, attempts)
		}
		if strings.Contains(string(d.Body), "erase.me") || !strings.Contains(string(d.Body), `"date_deleted"`) {
			t.Fatalf("body after erasure: %s", d.Body)
		}
		if fmt.Sprint(attempts[0].RequestHeaders) != fmt.Sprint(domain.ErasedHeaders) {
			t.Fatalf("headers after erasure: %v", attempts[0].RequestHeaders)
		}
		if _, err := st.Redeliver(ctx, c.acc, told.ID, delivered.ID, c.now()); !isErr[*domain.ConflictError](err) {
			t.Fatalf("redelivering a delivery of the erased person: %v, want a conflict", err)
		}
		if n, err := st.RedeliverFailed(ctx, c.acc, told.ID, Epoch, c.now()); err != nil || n != 0 {
			t.Fatalf("redelivering failed deliveries took %d of the erased person's, %v", n, err)
		}
		for _, w := range []domain.Webhook{told, untold} {
			ds, _, err := st.ListDeliveries(ctx, c.acc, w.ID, domain.DeliveryFilter{}, domain.PageRequest{Page: 1, Size: 50})
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range ds {
				if d.PersonID == gone.ID && d.Status == domain.DeliveryPending && d.Event != domain.EventPersonDeleted {
					t.Fatalf("a pending delivery of the erased person survived: %+v", d)
				}
			}
		}
	})

	t.Run("person.deleted goes to the subscriptions that list it, once", func(t *testing.T) {
		var got []domain.Delivery
		for _, w := range []domain.Webhook{told, untold} {
			ds, _, err := st.ListDeliveries(ctx, c.acc, w.ID, domain.DeliveryFilter{Event: domain.EventPersonDeleted}, domain.PageRequest{Page: 1, Size: 50})
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, ds...)
		}
		if len(got) != 1 || got[0].WebhookID != told.ID || got[0].PersonID != gone.ID || got[0].Status != domain.DeliveryPending {
			t.Fatalf("person.deleted deliveries: %+v", got)
		}
		d, _, err := st.GetDelivery(ctx, c.acc, told.ID, got[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf(`{"id":"%s","event":"person.deleted","created":"%s","data":{"id":"%s","date_deleted":"%s"}}`,
			d.ID, c.now().Format("2006-01-02T15:04:05.000Z"), gone.ID, c.now().Format("2006-01-02T15:04:05.000Z"))
		if string(d.Body) != want {
			t.Fatalf("body %s\nwant %s", d.Body, want)
		}
	})

	t.Run("the record of erasures", func(t *testing.T) {
		list, total, err := st.ListErasures(ctx, c.acc, domain.PageRequest{Page: 1, Size: 10})
		if err != nil || total != 1 || len(list) != 1 || list[0] != rec {
			t.Fatalf("erasures: %+v of %d, %v; want %+v", list, total, err, rec)
		}
		if _, total, err := st.ListErasures(ctx, other.acc, domain.PageRequest{Page: 1, Size: 10}); err != nil || total != 0 {
			t.Fatalf("another account's erasures: %d, %v", total, err)
		}
	})
}

var hexHash = regexp.MustCompile(`^[0-9a-f]{64}$`)

func testSuppression(t *testing.T, newStore NewStore) {
	ctx := context.Background()
	st := newStore(t)
	c := newPersonCase(t, st)
	other := c.other()
	key := newKey(c.acc, []domain.Scope{domain.ScopePersonsWrite}, c.now())
	if err := st.CreateKey(ctx, key); err != nil {
		t.Fatal(err)
	}
	suppresses := func() bool {
		t.Helper()
		k, err := st.KeyByHash(ctx, key.Hash)
		if err != nil {
			t.Fatal(err)
		}
		return k.AccountSuppresses
	}
	if suppresses() {
		t.Fatal("an account without suppressions reads as suppressing")
	}
	p, _ := c.upsert(domain.PersonUpsert{Email: setText("Quiet@Example.com"), ExternalID: setText("crm-quiet"),
		FID: setText("f-quiet"), Phone: setText("+1555999")})
	c.crumbsFor(p.ID, 2)
	c.erase(p.ID, true)

	sups, total, err := st.ListSuppressions(ctx, c.acc, domain.PageRequest{Page: 1, Size: 10})
	if err != nil || total != 4 || len(sups) != 4 {
		t.Fatalf("suppressions: %+v of %d, %v", sups, total, err)
	}
	var kinds []string
	for _, s := range sups {
		kinds = append(kinds, s.Kind)
		if !hexHash.MatchString(s.Hash) || s.KeyID != "key_eraser" || !s.CreatedAt.Equal(c.now()) {
			t.Fatalf("suppression %+v", s)
		}
	}
	slices.Sort(kinds)
	if !slices.Equal(kinds, []string{"email", "external_id", "f_id", "phone"}) {
		t.Fatalf("kinds %v", kinds)
	}
	if !suppresses() {
		t.Fatal("the key's read does not say the account suppresses")
	}
	if list, _, _ := st.ListErasures(ctx, c.acc, domain.PageRequest{Page: 1, Size: 10}); len(list) != 1 || !list[0].Suppressed {
		t.Fatalf("erasure record %+v", list)
	}

	idOf := map[string]string{} // kind: the suppression's id
	for _, s := range sups {
		idOf[s.Kind] = s.ID
	}
	wantSuppressed := func(what, kind string, err error) {
		t.Helper()
		var se *domain.SuppressedError
		if !errors.As(err, &se) || se.Kind != kind || !domain.IsRefusal(err) {
			t.Fatalf("%s: %v, want suppressed %s", what, err, kind)
		}
		if se.SuppressionID != idOf[kind] || !strings.Contains(se.Error(), idOf[kind]) {
			t.Fatalf("%s: the refusal names suppression %q (%s), want %s", what, se.SuppressionID, se.Error(), idOf[kind])
		}
	}
	count := func() domain.AccountCounts {
		n, err := st.AccountCounts(ctx, c.acc)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := count()
	_, _, err = st.UpsertPerson(ctx, c.acc, domain.PersonUpsert{Email: setText("QUIET@example.com")}, c.write())
	wantSuppressed("upsert by email, other case", "email", err)
	_, _, err = st.UpsertPerson(ctx, c.acc, domain.PersonUpsert{Email: setText("new@example.com"), Phone: setText("+1555999")}, c.write())
	wantSuppressed("upsert naming the phone", "phone", err)
	kept, _ := c.upsert(domain.PersonUpsert{ExternalID: setText("crm-kept")})
	_, err = st.UpdatePerson(ctx, c.acc, kept.ID, domain.PersonUpdate{Email: setText("quiet@example.com")}, c.write())
	wantSuppressed("update setting the email", "email", err)
	_, _, err = st.AppendBreadcrumb(ctx, c.acc, domain.BreadcrumbInput{Flavor: "click", ExternalID: new("crm-quiet")}, c.write())
	wantSuppressed("breadcrumb by external_id", "external_id", err)
	results, err := st.UpsertPersons(ctx, c.acc, []domain.PersonUpsert{{FID: setText("f-fresh")}, {FID: setText("f-quiet")}}, c.write())
	if err != nil || len(results) != 2 || results[0].Err != nil || !results[0].Created {
		t.Fatalf("batch: %+v, %v", results, err)
	}
	wantSuppressed("batch item by f_id", "f_id", results[1].Err)
	_, err = st.ImportPersons(ctx, c.acc, lineSeq([]importLine{{in: domain.PersonUpsert{ExternalID: setText("crm-ok")}},
		{in: domain.PersonUpsert{Email: setText("quiet@example.com")}}}, nil), c.write())
	var le *store.ImportLineError
	if !errors.As(err, &le) || le.Line != 2 {
		t.Fatalf("import: %v, want line 2 refused", err)
	}
	wantSuppressed("import line", "email", le.Err)
	if after := count(); after.Persons != before.Persons+2 || after.Breadcrumbs != before.Breadcrumbs {
		t.Fatalf("a refused write stored something: %+v then %+v", before, after)
	}
	w := c.write()
	w.NoSuppressions = true
	if _, created, err := st.UpsertPerson(ctx, other.acc, domain.PersonUpsert{Email: setText("quiet@example.com")}, other.write()); err != nil || !created {
		t.Fatalf("another account's upsert: %v", err)
	}

	if err := st.DeleteSuppression(ctx, other.acc, sups[0].ID); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("lift from another account: %v", err)
	}
	for _, s := range sups {
		if s.Kind == domain.SuppressEmail {
			if err := st.DeleteSuppression(ctx, c.acc, s.ID); err != nil {
				t.Fatal(err)
			}
			if err := st.DeleteSuppression(ctx, c.acc, s.ID); !errors.Is(err, domain.ErrNotFound) {
				t.Fatalf("lift twice: %v", err)
			}
		}
	}
	if _, created, err := st.UpsertPerson(ctx, c.acc, domain.PersonUpsert{Email: setText("quiet@example.com")}, c.write()); err != nil || !created {
		t.Fatalf("upsert after the lift: %v", err)
	}
	if _, _, err := st.UpsertPerson(ctx, c.acc, domain.PersonUpsert{ExternalID: setText("crm-quiet")}, c.write()); err == nil {
		t.Fatal("lifting the email lifted the external_id too")
	}
}

// testErasureConcurrent erases persons while writers upsert them and
// append breadcrumbs naming the same identifiers, in two accounts: each
// person ends either erased (and a write after it made a fresh person, or
// was refused under suppression) or not erased at all, never half, and
// the counts match what is there.
func testErasureConcurrent(t *testing.T, newStore NewStore) {
	ctx := context.Background()
	st := newStore(t)
	for round := range 3 {
		t.Run(fmt.Sprint("round ", round), func(t *testing.T) {
			cases := []*personCase{newPersonCase(t, st)}
			cases = append(cases, cases[0].other())
			var wg sync.WaitGroup
			type erased struct {
				c        *personCase
				id       string
				suppress bool
			}
			var mu sync.Mutex
			var done []erased
			for _, c := range cases {
				for i := range 3 {
					email := fmt.Sprintf("race%d-%d@example.com", round, i)
					p, _ := c.upsert(domain.PersonUpsert{Email: setText(email), ExternalID: setText("race-" + email)})
					c.crumbsFor(p.ID, 50)
					suppress := i%2 == 1
					wg.Add(3)
					go func() {
						defer wg.Done()
						_, err := st.ErasePerson(ctx, c.acc, p.ID, domain.EraseRequest{Suppress: suppress, KeyID: "k"}, c.write())
						if err != nil {
							t.Errorf("erase: %v", err)
							return
						}
						mu.Lock()
						done = append(done, erased{c, p.ID, suppress})
						mu.Unlock()
					}()
					go func() {
						defer wg.Done()
						for j := range 10 {
							_, _, err := st.UpsertPerson(ctx, c.acc, domain.PersonUpsert{Email: setText(email),
								FirstName: setText(fmt.Sprint("n", j))}, c.write())
							var se *domain.SuppressedError
							if err != nil && !errors.As(err, &se) {
								t.Errorf("upsert during erasure: %v", err)
							}
						}
					}()
					go func() {
						defer wg.Done()
						for range 10 {
							_, _, err := st.AppendBreadcrumb(ctx, c.acc, domain.BreadcrumbInput{Flavor: "click",
								ExternalID: new("race-" + email)}, c.write())
							var se *domain.SuppressedError
							if err != nil && !errors.As(err, &se) {
								t.Errorf("breadcrumb during erasure: %v", err)
							}
						}
					}()
				}
			}
			wg.Wait()
			for _, e := range done {
				if _, err := st.GetPerson(ctx, e.c.acc, e.id); !errors.Is(err, domain.ErrNotFound) {
					t.Fatalf("erased person %s still there: %v", e.id, err)
				}
				if n := e.c.crumbTotalOf(domain.BreadcrumbFilter{PersonID: &e.id}); n != 0 {
					t.Fatalf("erased person %s keeps %d breadcrumbs", e.id, n)
				}
				if e.suppress {
					if _, _, err := st.UpsertPerson(ctx, e.c.acc, domain.PersonUpsert{Email: setText("x@example.com"),
						ExternalID: setText("race-" + "x")}, e.c.write()); err != nil {
						t.Fatalf("an unsuppressed write refused: %v", err)
					}
				}
			}
			for _, c := range cases {
				counts, err := st.AccountCounts(ctx, c.acc)
				if err != nil {
					t.Fatal(err)
				}
				all, err := st.ExportPersons(ctx, c.acc, domain.PersonExport{}, 1000)
				if err != nil {
					t.Fatal(err)
				}
				if counts.Persons != len(all) {
					t.Fatalf("persons counted %d, held %d", counts.Persons, len(all))
				}
				held := 0
				for _, p := range all {
					held += c.crumbTotalOf(domain.BreadcrumbFilter{PersonID: &p.ID})
				}
				if total := c.crumbTotalOf(domain.BreadcrumbFilter{}); total != held || counts.Breadcrumbs != held {
					t.Fatalf("breadcrumbs: listed %d, counted %d, held by persons %d", total, counts.Breadcrumbs, held)
				}
			}
		})
	}
}

// testSuppressionLookup finds a suppression by the identifier it
// suppresses, in any form a write naming it would be refused in, and only
// in its own account.
func testSuppressionLookup(t *testing.T, newStore NewStore) {
	ctx := context.Background()
	st := newStore(t)
	c := newPersonCase(t, st)
	other := c.other()
	lookup := func(acc, kind, v string) []domain.Suppression {
		t.Helper()
		var email, ext, fid, phone *string
		switch kind {
		case domain.SuppressEmail:
			email = &v
		case domain.SuppressExternalID:
			ext = &v
		case domain.SuppressFID:
			fid = &v
		case domain.SuppressPhone:
			phone = &v
		}
		found, err := st.FindSuppressions(ctx, acc, domain.CheckedValues(email, ext, fid, phone))
		if err != nil {
			t.Fatal(err)
		}
		return found
	}
	if got := lookup(c.acc, domain.SuppressEmail, "quiet@example.com"); len(got) != 0 {
		t.Fatalf("an account that never suppressed: %+v", got)
	}
	if got, err := st.FindSuppressions(ctx, c.acc, nil); err != nil || len(got) != 0 {
		t.Fatalf("no values: %+v, %v", got, err)
	}
	p, _ := c.upsert(domain.PersonUpsert{Email: setText("Quiet@Example.com"), ExternalID: setText("crm-quiet"),
		FID: setText("f-quiet"), Phone: setText("+1 (555) 999")})
	c.erase(p.ID, true)
	// A second erasure with suppression, so that a lookup must pick.
	q, _ := c.upsert(domain.PersonUpsert{Email: setText("loud@example.com")})
	c.erase(q.ID, true)
	// The other account erases a person with the same identifiers: its
	// suppressions are its own.
	op, _ := other.upsert(domain.PersonUpsert{Email: setText("quiet@example.com"), ExternalID: setText("crm-quiet")})
	other.erase(op.ID, true)

	all, total, err := st.ListSuppressions(ctx, c.acc, domain.PageRequest{Page: 1, Size: 10})
	if err != nil || total != 5 {
		t.Fatalf("suppressions: %+v of %d, %v", all, total, err)
	}
	theirs, _, err := st.ListSuppressions(ctx, other.acc, domain.PageRequest{Page: 1, Size: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ kind, value string }{
		{domain.SuppressEmail, "quiet@example.com"},
		{domain.SuppressExternalID, "crm-quiet"},
		{domain.SuppressFID, "f-quiet"},
		{domain.SuppressPhone, "+1555999"},
		{domain.SuppressPhone, "+1 555-999"},
	} {
		got := lookup(c.acc, tc.kind, tc.value)
		if len(got) != 1 || got[0].Kind != tc.kind {
			t.Fatalf("%s %q: %+v", tc.kind, tc.value, got)
		}
		i := slices.IndexFunc(all, func(s domain.Suppression) bool { return s.ID == got[0].ID })
		if i < 0 || all[i] != got[0] {
			t.Fatalf("%s %q: %+v is not the listed suppression", tc.kind, tc.value, got[0])
		}
		if slices.ContainsFunc(theirs, func(s domain.Suppression) bool { return s.ID == got[0].ID }) {
			t.Fatalf("%s %q: found the other account's suppression", tc.kind, tc.value)
		}
	}
	for _, tc := range []struct{ kind, value string }{
		{domain.SuppressEmail, "nobody@example.com"},
		// The kind is part of the hash: an f_id equal to the external_id
		// is not suppressed with it.
		{domain.SuppressFID, "crm-quiet"},
		{domain.SuppressPhone, "+1555998"},
	} {
		if got := lookup(c.acc, tc.kind, tc.value); len(got) != 0 {
			t.Fatalf("%s %q, never suppressed: %+v", tc.kind, tc.value, got)
		}
	}
	if got := lookup(c.acc, domain.SuppressEmail, "loud@example.com"); len(got) != 1 || got[0].Kind != domain.SuppressEmail {
		t.Fatalf("the second erasure's email: %+v", got)
	}
	if got := lookup(other.acc, domain.SuppressFID, "f-quiet"); len(got) != 0 {
		t.Fatalf("the other account never suppressed this f_id: %+v", got)
	}
	if got := lookup(other.acc, domain.SuppressEmail, "quiet@example.com"); len(got) != 1 || got[0].ID != theirs[slices.IndexFunc(theirs,
		func(s domain.Suppression) bool { return s.Kind == domain.SuppressEmail })].ID {
		t.Fatalf("the other account's own suppression: %+v", got)
	}
	// Lifted, it is found no more.
	found := lookup(c.acc, domain.SuppressExternalID, "crm-quiet")
	if err := st.DeleteSuppression(ctx, c.acc, found[0].ID); err != nil {
		t.Fatal(err)
	}
	if got := lookup(c.acc, domain.SuppressExternalID, "crm-quiet"); len(got) != 0 {
		t.Fatalf("after the lift: %+v", got)
	}
	if got := lookup(other.acc, domain.SuppressExternalID, "crm-quiet"); len(got) != 1 {
		t.Fatalf("the lift in one account lifted the other's: %+v", got)
	}
}
