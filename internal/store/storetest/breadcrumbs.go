package storetest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

func (c *personCase) appendCrumb(in domain.BreadcrumbInput) (domain.Breadcrumb, bool) {
	c.t.Helper()
	b, replayed, err := c.st.AppendBreadcrumb(context.Background(), c.acc, in, c.write())
	if err != nil {
		c.t.Fatalf("append breadcrumb %+v: %v", in, err)
	}
	return b, replayed
}

// campaignAndProject imports one project and one campaign of it.
func (c *personCase) campaignAndProject() (campaignID, projectID string) {
	c.t.Helper()
	ctx := context.Background()
	projectID, campaignID = domain.NewID("prj"), domain.NewID("cmp")
	if err := c.st.ImportProjects(ctx, c.acc, []domain.Project{{ID: projectID, Name: "Summit", DateCreated: domain.T(c.now())}}); err != nil {
		c.t.Fatal(err)
	}
	if err := c.st.ImportCampaigns(ctx, c.acc, []domain.Campaign{{ID: campaignID, Name: "Spring", ProjectID: &projectID,
		DateCreated: domain.T(c.now())}}); err != nil {
		c.t.Fatal(err)
	}
	return campaignID, projectID
}

func (c *personCase) crumbTotal() int {
	c.t.Helper()
	_, total, err := c.st.ListBreadcrumbs(context.Background(), c.acc, domain.BreadcrumbFilter{}, domain.PageRequest{Page: 1, Size: 1})
	if err != nil {
		c.t.Fatal(err)
	}
	return total
}

func testBreadcrumbs(t *testing.T, newStore NewStore) {
	ctx := context.Background()

	t.Run("the person is person_id, else matched in order without writing identifiers, else created", func(t *testing.T) {
		c := newPersonCase(t, newStore(t))
		a, _ := c.upsert(domain.PersonUpsert{ExternalID: setText("a"), Email: setText("a@x.test")})
		b, _ := c.upsert(domain.PersonUpsert{Email: setText("b@x.test")})
		f, _ := c.upsert(domain.PersonUpsert{FID: setText("f")})
		c.advance(time.Hour)

		for _, tc := range []struct {
			in   domain.BreadcrumbInput
			want string
		}{
			{domain.BreadcrumbInput{PersonID: &b.ID, ExternalID: textPtr("a")}, b.ID},
			{domain.BreadcrumbInput{ExternalID: textPtr("a"), Email: textPtr("b@x.test"), FID: textPtr("f")}, a.ID},
			{domain.BreadcrumbInput{ExternalID: textPtr("nobody"), Email: textPtr("B@X.test"), FID: textPtr("f")}, b.ID},
			{domain.BreadcrumbInput{Email: textPtr("nobody@x.test"), FID: textPtr("f")}, f.ID},
		} {
			tc.in.Flavor = "page_view"
			crumb, replayed := c.appendCrumb(tc.in)
			if replayed || crumb.PersonID != tc.want || crumb.Flavor != "page_view" || !crumb.CreatedAt.Equal(c.now()) ||
				!crumb.ActivityAt.Equal(c.now()) || crumb.OccurredAt != nil {
				t.Fatalf("breadcrumb %+v resolved to %+v, want person %s", tc.in, crumb, tc.want)
			}
		}
		// Matching only reads: no identifier was written, and no burst was
		// extended, but each matched person was seen now.
		for _, p := range []*domain.Person{a, b, f} {
			got := c.get(p.ID)
			if !slices.Equal([]string{textOf(got.ExternalID), textOf(got.Email), textOf(got.FID)},
				[]string{textOf(p.ExternalID), textOf(p.Email), textOf(p.FID)}) {
				t.Fatalf("a breadcrumb wrote identifiers onto %s: %+v", p.ID, got)
			}
			if !got.DateLastSeen.Equal(c.now()) || got.UpsertResult != domain.UpsertCreated {
				t.Fatalf("%s after a breadcrumb: last seen %v, upsert_result %s", p.ID, got.DateLastSeen, got.UpsertResult)
			}
			c.wantBurst(p.ID, domain.EventPersonCreated, Epoch, Epoch)
		}

		crumb, _ := c.appendCrumb(domain.BreadcrumbInput{Flavor: "form_submission", ExternalID: textPtr("new"), Email: textPtr("New@x.test"), FID: textPtr("nf")})
		made := c.get(crumb.PersonID)
		if textOf(made.ExternalID) != "new" || textOf(made.Email) != "new@x.test" || textOf(made.FID) != "nf" ||
			made.UpsertResult != domain.UpsertCreated || !made.DateCreated.Equal(c.now()) {
			t.Fatalf("person created by a breadcrumb: %+v", made)
		}
		c.wantBurst(made.ID, domain.EventPersonCreated, c.now(), c.now())

		other := c.other()
		for _, in := range []domain.BreadcrumbInput{{Flavor: "custom", PersonID: textPtr("per_missing")}, {Flavor: "custom", PersonID: &a.ID}} {
			if _, _, err := other.st.AppendBreadcrumb(ctx, other.acc, in, other.write()); !isErr[*domain.NotFoundError](err) {
				t.Fatalf("person_id %s from another account: %v", *in.PersonID, err)
			}
		}
		// Another account's identifiers never resolve to this account's person.
		foreign, _ := other.appendCrumb(domain.BreadcrumbInput{Flavor: "custom", ExternalID: textPtr("a")})
		if foreign.PersonID == a.ID || other.crumbTotal() != 1 || c.crumbTotal() != 5 {
			t.Fatalf("accounts mixed: foreign crumb %+v, totals %d and %d", foreign, other.crumbTotal(), c.crumbTotal())
		}
	})

	t.Run("campaign_id and project_id must exist in the account; a refused breadcrumb leaves nothing", func(t *testing.T) {
		c := newPersonCase(t, newStore(t))
		campaign, project := c.campaignAndProject()
		other := c.other()
		foreignCampaign, foreignProject := other.campaignAndProject()
		for _, in := range []domain.BreadcrumbInput{
			{CampaignID: textPtr("cmp_missing")}, {ProjectID: textPtr("prj_missing")},
			{CampaignID: &foreignCampaign}, {ProjectID: &foreignProject}, {CampaignID: &campaign, ProjectID: &foreignProject},
		} {
			in.Flavor, in.ExternalID = "donation", textPtr("fresh")
			if _, _, err := c.st.AppendBreadcrumb(ctx, c.acc, in, c.write()); !isErr[*domain.NotFoundError](err) {
				t.Fatalf("breadcrumb %+v: %v, want not found", in, err)
			}
		}
		if ps, _, _ := c.st.ListPersons(ctx, c.acc, byExternalID("fresh"), domain.PageRequest{Page: 1, Size: 1}); len(ps) != 0 {
			t.Fatal("a refused breadcrumb created its person")
		}
		if c.crumbTotal() != 0 {
			t.Fatal("a refused breadcrumb was stored")
		}
		crumb, _ := c.appendCrumb(domain.BreadcrumbInput{Flavor: "donation", ExternalID: textPtr("fresh"), CampaignID: &campaign, ProjectID: &project})
		if textOf(crumb.CampaignID) != campaign || textOf(crumb.ProjectID) != project {
			t.Fatalf("references: %+v", crumb)
		}
	})

	t.Run("an idempotency id is overwritten by its replay, never duplicated", func(t *testing.T) {
		c := newPersonCase(t, newStore(t))
		p, _ := c.upsert(domain.PersonUpsert{ExternalID: setText("r")})
		id := domain.BreadcrumbID(c.acc, "delivery-1")
		occurred := Epoch.Add(-time.Hour)
		first, replayed := c.appendCrumb(domain.BreadcrumbInput{ID: id, Flavor: "email_send", PersonID: &p.ID, OccurredAt: &occurred})
		if replayed || first.ID != id || !first.ActivityAt.Equal(occurred) {
			t.Fatalf("first: replayed %v %+v", replayed, first)
		}
		c.advance(time.Minute)
		again, replayed := c.appendCrumb(domain.BreadcrumbInput{ID: id, Flavor: "email_view", ExternalID: textPtr("r"), Email: textPtr("r@x.test")})
		if !replayed || again.ID != id || again.Flavor != "email_view" || !again.CreatedAt.Equal(Epoch) || again.OccurredAt != nil ||
			!again.ActivityAt.Equal(Epoch) || textOf(again.Email) != "r@x.test" || again.PersonID != p.ID {
			t.Fatalf("replay: replayed %v %+v", replayed, again)
		}
		list, total, err := c.st.ListBreadcrumbs(ctx, c.acc, domain.BreadcrumbFilter{}, domain.PageRequest{Page: 1, Size: 10})
		if err != nil || total != 1 || list[0].Flavor != "email_view" || textOf(list[0].Email) != "r@x.test" {
			t.Fatalf("after a replay: %+v total %d, %v", list, total, err)
		}
		other := c.other()
		q, _ := other.upsert(domain.PersonUpsert{ExternalID: setText("r")})
		theirs, replayed := other.appendCrumb(domain.BreadcrumbInput{ID: domain.BreadcrumbID(other.acc, "delivery-1"), Flavor: "custom", PersonID: &q.ID})
		if replayed || theirs.ID == id || c.crumbTotal() != 1 {
			t.Fatalf("the same key in another account: replayed %v id %s", replayed, theirs.ID)
		}
	})
}

func testListBreadcrumbs(t *testing.T, newStore NewStore) {
	ctx := context.Background()
	c := newPersonCase(t, newStore(t))
	campaign, project := c.campaignAndProject()
	p, _ := c.upsert(domain.PersonUpsert{ExternalID: setText("p")})
	q, _ := c.upsert(domain.PersonUpsert{ExternalID: setText("q")})
	at := func(m int) *time.Time { v := Epoch.Add(time.Duration(m) * time.Minute); return &v }

	// Activity times in minutes after Epoch; two pairs tie and go by id.
	made := map[string]domain.Breadcrumb{}
	for _, b := range []struct {
		name     string
		in       domain.BreadcrumbInput
		activity int
	}{
		{"p10", domain.BreadcrumbInput{Flavor: "page_view", PersonID: &p.ID, OccurredAt: at(10)}, 10},
		{"p20", domain.BreadcrumbInput{Flavor: "page_view", PersonID: &p.ID, OccurredAt: at(20), CampaignID: &campaign}, 20},
		{"q20", domain.BreadcrumbInput{Flavor: "donation", PersonID: &q.ID, OccurredAt: at(20), ProjectID: &project}, 20},
		{"q30", domain.BreadcrumbInput{Flavor: "donation", PersonID: &q.ID, OccurredAt: at(30), CampaignID: &campaign, ProjectID: &project}, 30},
		// No occurred_at: the activity time is the creation time.
		{"p40", domain.BreadcrumbInput{Flavor: "email_send", PersonID: &p.ID}, 40},
		{"q40", domain.BreadcrumbInput{Flavor: "email_send", PersonID: &q.ID, OccurredAt: at(40)}, 40},
	} {
		c.setNow(*at(b.activity))
		if b.in.OccurredAt != nil {
			c.setNow(Epoch.Add(time.Hour))
		}
		crumb, _ := c.appendCrumb(b.in)
		if !crumb.ActivityAt.Equal(*at(b.activity)) {
			t.Fatalf("%s: activity %v", b.name, crumb.ActivityAt)
		}
		made[b.name] = crumb
	}
	newestFirst := func(names ...string) []string {
		out := make([]string, len(names))
		for i, n := range names {
			out[i] = made[n].ID
		}
		// Ties on activity time go by id, descending.
		slices.SortStableFunc(out, func(x, y string) int {
			ax, ay := activityOf(made, x), activityOf(made, y)
			if c := ay.Compare(ax); c != 0 {
				return c
			}
			return strings.Compare(y, x)
		})
		return out
	}
	list := func(f domain.BreadcrumbFilter, page, size int) ([]string, int) {
		t.Helper()
		bs, total, err := c.st.ListBreadcrumbs(ctx, c.acc, f, domain.PageRequest{Page: page, Size: size})
		if err != nil {
			t.Fatal(err)
		}
		ids := []string{}
		for _, b := range bs {
			ids = append(ids, b.ID)
		}
		return ids, total
	}

	all := newestFirst("p10", "p20", "q20", "q30", "p40", "q40")
	var paged []string
	for page := 1; page <= 3; page++ {
		ids, total := list(domain.BreadcrumbFilter{}, page, 2)
		if total != 6 {
			t.Fatalf("total %d", total)
		}
		paged = append(paged, ids...)
	}
	if !slices.Equal(paged, all) {
		t.Fatalf("order %v, want %v", paged, all)
	}

	for _, tc := range []struct {
		name string
		f    domain.BreadcrumbFilter
		want []string
	}{
		{"flavor", domain.BreadcrumbFilter{Flavor: textPtr("donation")}, newestFirst("q20", "q30")},
		{"person", domain.BreadcrumbFilter{PersonID: &p.ID}, newestFirst("p10", "p20", "p40")},
		{"campaign", domain.BreadcrumbFilter{CampaignID: &campaign}, newestFirst("p20", "q30")},
		{"project", domain.BreadcrumbFilter{ProjectID: &project}, newestFirst("q20", "q30")},
		{"AND", domain.BreadcrumbFilter{PersonID: &q.ID, CampaignID: &campaign, Flavor: textPtr("donation")}, newestFirst("q30")},
		{"since inclusive", domain.BreadcrumbFilter{Since: at(30)}, newestFirst("q30", "p40", "q40")},
		{"until inclusive", domain.BreadcrumbFilter{Until: at(20)}, newestFirst("p10", "p20", "q20")},
		{"since = until", domain.BreadcrumbFilter{Since: at(20), Until: at(20)}, newestFirst("p20", "q20")},
		{"a millisecond past", domain.BreadcrumbFilter{Since: ptrTime(at(20).Add(time.Millisecond)), Until: ptrTime(at(30).Add(-time.Millisecond))}, []string{}},
		{"sub-millisecond since", domain.BreadcrumbFilter{Since: ptrTime(at(20).Add(time.Microsecond))}, newestFirst("q30", "p40", "q40")},
		{"unknown person", domain.BreadcrumbFilter{PersonID: textPtr("per_missing")}, []string{}},
	} {
		if ids, total := list(tc.f, 1, 25); !slices.Equal(ids, tc.want) || total != len(tc.want) {
			t.Fatalf("%s: %v (total %d), want %v", tc.name, ids, total, tc.want)
		}
	}

	other := c.other()
	for _, f := range []domain.BreadcrumbFilter{{}, {PersonID: &p.ID}, {CampaignID: &campaign}} {
		if bs, total, err := other.st.ListBreadcrumbs(ctx, other.acc, f, domain.PageRequest{Page: 1, Size: 25}); err != nil || total != 0 || len(bs) != 0 {
			t.Fatalf("another account lists %d breadcrumbs for %+v (%v)", total, f, err)
		}
	}
}

func activityOf(made map[string]domain.Breadcrumb, id string) time.Time {
	for _, b := range made {
		if b.ID == id {
			return b.ActivityAt
		}
	}
	return time.Time{}
}

func ptrTime(t time.Time) *time.Time { return &t }
