package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

func testCampaignsProjects(t *testing.T, newStore NewStore) {
	ctx := context.Background()
	ptr := func(s string) *string { return &s }
	tp := func(d time.Duration) *domain.Time { v := domain.T(Epoch.Add(d)); return &v }
	firstPage := domain.PageRequest{Page: 1, Size: 100}

	t.Run("import, get, list in order, re-import updates", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		a := NewAccount(t, st)
		later := domain.Project{ID: "prj_later", Name: "Later", DateCreated: domain.T(Epoch.Add(time.Hour))}
		full := domain.Project{ID: "prj_full", Name: "Summit", Location: ptr("Lisbon"), RegistrationURL: ptr("https://summit.example/register"),
			SiteURL: ptr("https://summit.example"), DateCreated: domain.T(Epoch), DateStart: tp(24 * time.Hour), DateEnd: tp(48 * time.Hour)}
		if err := st.ImportProjects(ctx, a, []domain.Project{later, full}); err != nil {
			t.Fatal(err)
		}
		got, err := st.GetProject(ctx, a, "prj_full")
		if err != nil || got.Name != "Summit" || *got.Location != "Lisbon" || *got.RegistrationURL != "https://summit.example/register" ||
			*got.SiteURL != "https://summit.example" || !got.DateCreated.Equal(Epoch) || !got.DateStart.Equal(Epoch.Add(24*time.Hour)) ||
			!got.DateEnd.Equal(Epoch.Add(48*time.Hour)) || got.AccountID != a {
			t.Fatalf("get project: %+v, %v", got, err)
		}
		projects, total, err := st.ListProjects(ctx, a, firstPage)
		if err != nil || total != 2 || projects[0].ID != "prj_full" || projects[1].ID != "prj_later" || projects[1].Location != nil || projects[1].DateStart != nil {
			t.Fatalf("list projects: %+v total %d err %v", projects, total, err)
		}

		c := domain.Campaign{ID: "cmp_spring", Name: "Spring", Description: ptr("Newsletter"), Kind: ptr("email"), State: ptr("running"),
			IsEnabled: true, ProjectID: ptr("prj_full"), DateCreated: domain.T(Epoch), DateStart: tp(time.Hour), DateEnd: tp(2 * time.Hour)}
		bare := domain.Campaign{Name: "Bare"}
		if err := st.ImportCampaigns(ctx, a, []domain.Campaign{c, bare}); err != nil {
			t.Fatal(err)
		}
		gotC, err := st.GetCampaign(ctx, a, "cmp_spring")
		if err != nil || gotC.Name != "Spring" || *gotC.Description != "Newsletter" || *gotC.Kind != "email" || *gotC.State != "running" ||
			!gotC.IsEnabled || *gotC.ProjectID != "prj_full" || !gotC.DateStart.Equal(Epoch.Add(time.Hour)) || !gotC.DateEnd.Equal(Epoch.Add(2*time.Hour)) {
			t.Fatalf("get campaign: %+v, %v", gotC, err)
		}
		campaigns, total, err := st.ListCampaigns(ctx, a, firstPage)
		if err != nil || total != 2 {
			t.Fatalf("list campaigns: %+v total %d err %v", campaigns, total, err)
		}
		var made domain.Campaign
		for _, x := range campaigns {
			if x.Name == "Bare" {
				made = x
			}
		}
		if made.ID == "" || made.ProjectID != nil || made.IsEnabled || made.Kind != nil || made.DateCreated.IsZero() {
			t.Fatalf("a campaign without id or date: %+v", made)
		}

		c.Name, c.IsEnabled, c.ProjectID, c.DateCreated = "Spring 2", false, nil, domain.Time{}
		if err := st.ImportCampaigns(ctx, a, []domain.Campaign{c}); err != nil {
			t.Fatal(err)
		}
		gotC, err = st.GetCampaign(ctx, a, "cmp_spring")
		if err != nil {
			t.Fatal(err)
		}
		if gotC.Name != "Spring 2" || gotC.IsEnabled || gotC.ProjectID != nil || !gotC.DateCreated.Equal(Epoch) {
			t.Fatalf("re-imported campaign: %+v", gotC)
		}
		if _, total, err := st.ListCampaigns(ctx, a, firstPage); err != nil || total != 2 {
			t.Fatalf("re-import added a campaign: total %d, err %v", total, err)
		}
		past, total, err := st.ListCampaigns(ctx, a, domain.PageRequest{Page: 2, Size: 2})
		if err != nil || total != 2 || len(past) != 0 {
			t.Fatalf("past the end: %d items total %d err %v", len(past), total, err)
		}
	})

	t.Run("a bad record imports nothing; a second account sees nothing", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		a := NewAccount(t, st)
		b := NewAccount(t, st)
		if err := st.ImportProjects(ctx, b, []domain.Project{{ID: "prj_b", Name: "Theirs", DateCreated: domain.T(Epoch)}}); err != nil {
			t.Fatal(err)
		}
		if err := st.ImportCampaigns(ctx, b, []domain.Campaign{{ID: "cmp_b", Name: "Theirs", ProjectID: ptr("prj_b")}}); err != nil {
			t.Fatal(err)
		}
		ok := domain.Project{ID: "prj_a", Name: "Mine"}
		wantImportError(t, st.ImportProjects(ctx, a, []domain.Project{ok, {ID: "prj_b", Name: "Stolen"}}), 1)
		if _, total, err := st.ListProjects(ctx, a, firstPage); err != nil || total != 0 {
			t.Fatalf("a failed import left %d projects, err %v", total, err)
		}
		if p, err := st.GetProject(ctx, b, "prj_b"); err != nil || p == nil || p.Name != "Theirs" {
			t.Fatalf("another account's project changed: %+v, err %v", p, err)
		}
		if err := st.ImportProjects(ctx, a, []domain.Project{ok}); err != nil {
			t.Fatal(err)
		}
		good := domain.Campaign{Name: "Mine", ProjectID: ptr("prj_a")}
		wantImportError(t, st.ImportCampaigns(ctx, a, []domain.Campaign{good, {Name: "Bad", ProjectID: ptr("prj_b")}}), 1)
		wantImportError(t, st.ImportCampaigns(ctx, a, []domain.Campaign{good, good, {Name: "Bad", ProjectID: ptr("prj_none")}}), 2)
		wantImportError(t, st.ImportCampaigns(ctx, a, []domain.Campaign{{ID: "cmp_b", Name: "Stolen"}}), 0)
		if _, total, err := st.ListCampaigns(ctx, a, firstPage); err != nil || total != 0 {
			t.Fatalf("failed imports left %d campaigns, err %v", total, err)
		}

		_, err := st.GetProject(ctx, a, "prj_b")
		wantNotFound(t, "foreign project", err)
		_, err = st.GetCampaign(ctx, a, "cmp_b")
		wantNotFound(t, "foreign campaign", err)
		_, err = st.GetCampaign(ctx, a, "cmp_missing")
		wantNotFound(t, "missing campaign", err)
		if list, total, err := st.ListProjects(ctx, b, firstPage); err != nil || total != 1 || list[0].ID != "prj_b" {
			t.Fatalf("the second account lists %+v total %d err %v", list, total, err)
		}
	})
}
