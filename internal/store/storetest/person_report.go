package storetest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// testPersonReport holds an access request's reads: the person with every
// link and value it holds, archived ones too; its breadcrumbs and the
// deliveries that carried it, walked page by page to the end, in order,
// none skipped or repeated; and nothing of another person or account.
func testPersonReport(t *testing.T, newStore NewStore) {
	ctx := context.Background()
	st := newStore(t)
	c := newPersonCase(t, st)
	foreign := c.other()
	at := func(i int) time.Time { return Epoch.Add(time.Duration(i) * time.Minute) }

	// Deliveries first, before any person write opens a burst that a claim
	// of theirs would take. Their person is named ahead of its creation.
	personID, neighbourID := domain.NewID(domain.PersonIDPrefix), domain.NewID(domain.PersonIDPrefix)
	w1, w2, wf := newWebhook(t, st, c.acc), newWebhook(t, st, c.acc), newWebhook(t, st, foreign.acc)
	headers := map[string]string{"Content-Type": "application/json", "Service-Signature": "t=1,v1=" + domain.Redacted}
	deliver := func(w domain.Webhook, i int, person string, finish bool) domain.Delivery {
		d := queueDeliveryEdited(t, st, w, at(i), func(d *domain.Delivery) {
			d.PersonID, d.Body = person, []byte(`{"data":{"id":"`+person+`"}}`)
		})
		if finish {
			code := 200
			if err := st.FinishAttempt(ctx, claimOneDelivery(t, st, at(i)), store.AttemptResult{Status: domain.DeliverySucceeded,
				Attempt: domain.DeliveryAttempt{AttemptedAt: at(i), StatusCode: &code, DurationMS: 4, RequestHeaders: headers}}); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	var want []domain.Delivery
	want = append(want, deliver(w1, 0, personID, true), deliver(w2, 1, personID, true))
	deliver(w1, 2, neighbourID, true)
	deliver(wf, 3, personID, true) // another account's delivery of the same id
	want = append(want, deliver(w1, 4, personID, false), deliver(w2, 5, personID, false))
	slices.SortFunc(want, func(a, b domain.Delivery) int {
		if a.WebhookID != b.WebhookID {
			return strings.Compare(a.WebhookID, b.WebhookID)
		}
		return a.CreatedAt.Compare(b.CreatedAt)
	})

	c.setNow(Epoch.Add(24 * time.Hour))
	kept, gone := c.tag("kept"), c.tag("gone")
	plan, old := c.field("Person", "plan", "text"), c.field("Person", "old", "text")
	p, _ := c.upsert(domain.PersonUpsert{ExternalID: setText("ext-report"), Email: setText("Report@Example.test"),
		FirstName: setText("Ada"), CustomFields: fieldValues(map[string]any{"plan": "gold", "old": "kept after archiving"})})
	if _, err := st.AddPersonTags(ctx, c.acc, p.ID, []string{kept, gone}, c.write()); err != nil {
		t.Fatal(err)
	}
	if err := st.ArchiveTag(ctx, c.acc, gone, c.now()); err != nil {
		t.Fatal(err)
	}
	if err := st.ArchiveCustomField(ctx, c.acc, old.ID, c.now()); err != nil {
		t.Fatal(err)
	}
	neighbour, _ := c.upsert(domain.PersonUpsert{ExternalID: setText("ext-neighbour")})
	stranger, _ := foreign.upsert(domain.PersonUpsert{ExternalID: setText("ext-report")})

	// Seven breadcrumbs, three of them at one instant, so that a page
	// boundary falls among equal activity times.
	var crumbs []domain.Breadcrumb
	for i := range 7 {
		occurred := c.now().Add(time.Duration(min(i, 3)) * time.Hour)
		b, _ := c.appendCrumb(domain.BreadcrumbInput{Flavor: "web", PersonID: &p.ID, OccurredAt: &occurred})
		crumbs = append(crumbs, b)
	}
	slices.SortFunc(crumbs, func(a, b domain.Breadcrumb) int {
		if n := a.ActivityAt.Compare(b.ActivityAt); n != 0 {
			return n
		}
		return strings.Compare(a.ID, b.ID)
	})
	c.appendCrumb(domain.BreadcrumbInput{Flavor: "web", PersonID: &neighbour.ID})
	foreign.appendCrumb(domain.BreadcrumbInput{Flavor: "web", PersonID: &stranger.ID})

	t.Run("the record holds every link and value, archived ones too", func(t *testing.T) {
		rec, err := st.PersonRecord(ctx, c.acc, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Person.ID != p.ID || textOf(rec.Person.FirstName) != "Ada" || !slices.Equal(rec.Person.TagIDs, []string{kept}) {
			t.Errorf("person %+v", rec.Person)
		}
		// Both were linked at one instant: the tag id decides. Two ids made
		// in one millisecond order by their random part, not by which came
		// first.
		first, second := kept, gone
		if gone < kept {
			first, second = gone, kept
		}
		if len(rec.Tags) != 2 || rec.Tags[0].ID != first || rec.Tags[1].ID != second || !rec.Tags[0].LinkedAt.Equal(c.now()) {
			t.Fatalf("tags %+v, want %s then %s", rec.Tags, first, second)
		}
		byID := map[string]store.HeldTag{}
		for _, tag := range rec.Tags {
			byID[tag.ID] = tag
		}
		if byID[kept].Archived || !byID[gone].Archived || byID[gone].Name != "gone" {
			t.Errorf("tags %+v", rec.Tags)
		}
		if len(rec.Values) != 2 || rec.Values[0].Key != "old" || !rec.Values[0].Archived || rec.Values[0].Value != "kept after archiving" ||
			rec.Values[1].FieldID != plan.ID || rec.Values[1].Archived || rec.Values[1].Value != "gold" {
			t.Errorf("values %+v", rec.Values)
		}
		if rec.Burst == nil || rec.Burst.PersonID != p.ID || rec.Burst.Event != domain.EventPersonCreated {
			t.Errorf("burst %+v", rec.Burst)
		}
	})

	t.Run("another account's id and an absent one are not found", func(t *testing.T) {
		for _, tc := range []struct{ acc, id string }{{foreign.acc, p.ID}, {c.acc, stranger.ID}, {c.acc, "per_absent"}} {
			if _, err := st.PersonRecord(ctx, tc.acc, tc.id); !errors.Is(err, domain.ErrNotFound) {
				t.Errorf("record of %s in %s: %v, want not found", tc.id, tc.acc, err)
			}
		}
	})

	t.Run("breadcrumbs, page by page", func(t *testing.T) {
		for _, size := range []int{1, 2, 3, 7, 100} {
			var got []string
			var after *store.BreadcrumbKey
			for pages := 0; ; pages++ {
				page, err := st.ReportBreadcrumbs(ctx, c.acc, p.ID, after, size)
				if err != nil || len(page) > size || pages > 10 {
					t.Fatalf("size %d: page of %d, %v", size, len(page), err)
				}
				if len(page) == 0 {
					break
				}
				for _, b := range page {
					if b.PersonID != p.ID || b.AccountID != c.acc {
						t.Fatalf("breadcrumb %+v of someone else", b)
					}
					got = append(got, b.ID)
				}
				last := page[len(page)-1]
				after = &store.BreadcrumbKey{ActivityAt: last.ActivityAt, ID: last.ID}
			}
			if wantIDs := crumbIDs(crumbs); !slices.Equal(got, wantIDs) {
				t.Errorf("size %d: %v, want %v", size, got, wantIDs)
			}
		}
		for _, tc := range []struct{ acc, id string }{{foreign.acc, p.ID}, {c.acc, "per_absent"}} {
			if page, err := st.ReportBreadcrumbs(ctx, tc.acc, tc.id, nil, 10); err != nil || len(page) != 0 {
				t.Errorf("breadcrumbs of %s in %s: %d, %v; want none", tc.id, tc.acc, len(page), err)
			}
		}
	})

	t.Run("deliveries, page by page, with bodies and attempts", func(t *testing.T) {
		for _, size := range []int{1, 3, 100} {
			var got []store.ReportedDelivery
			var after *store.DeliveryKey
			for pages := 0; ; pages++ {
				page, err := st.ReportDeliveries(ctx, c.acc, personID, after, size)
				if err != nil || len(page) > size || pages > 10 {
					t.Fatalf("size %d: page of %d, %v", size, len(page), err)
				}
				if len(page) == 0 {
					break
				}
				got = append(got, page...)
				last := page[len(page)-1].Delivery
				after = &store.DeliveryKey{WebhookID: last.WebhookID, CreatedAt: last.CreatedAt, ID: last.ID}
			}
			if len(got) != len(want) {
				t.Fatalf("size %d: %d deliveries, want %d", size, len(got), len(want))
			}
			for i, r := range got {
				d := r.Delivery
				if d.ID != want[i].ID || d.PersonID != personID || d.AccountID != c.acc || string(d.Body) != string(want[i].Body) {
					t.Errorf("size %d, #%d: %+v, want %+v", size, i, d, want[i])
				}
				wantAttempts := 0
				if d.Status == domain.DeliverySucceeded {
					wantAttempts = 1
				}
				if len(r.Attempts) != wantAttempts {
					t.Fatalf("size %d, #%d: attempts %+v", size, i, r.Attempts)
				}
				if wantAttempts == 1 && (r.Attempts[0].RequestHeaders["Content-Type"] != "application/json" || *r.Attempts[0].StatusCode != 200) {
					t.Errorf("size %d, #%d: attempt %+v", size, i, r.Attempts[0])
				}
			}
		}
		if page, err := st.ReportDeliveries(ctx, foreign.acc, "per_absent", nil, 10); err != nil || len(page) != 0 {
			t.Errorf("deliveries of an absent person: %d, %v; want none", len(page), err)
		}
	})
}

func crumbIDs(bs []domain.Breadcrumb) []string {
	ids := make([]string, len(bs))
	for i, b := range bs {
		ids[i] = b.ID
	}
	return ids
}
