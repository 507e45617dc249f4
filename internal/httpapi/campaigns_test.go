package httpapi_test

import (
	"context"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/httpapi/apitest"
	"github.com/pds-dev/pds/internal/testenv"
)

func TestCampaignsAndProjects(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		ctx := context.Background()
		acc, other := env.NewAccount(), env.NewAccount()
		key, otherKey := env.Key(acc), env.Key(other)
		str := func(s string) *string { return &s }
		at := func(d time.Duration) *domain.Time { v := domain.T(apitest.Start.Add(d)); return &v }

		summit := domain.Project{ID: "prj_summit", Name: "Summit", Location: str("Lisbon"), RegistrationURL: str("https://summit.example/register"),
			SiteURL: str("https://summit.example"), DateCreated: domain.T(apitest.Start), DateStart: at(24 * time.Hour), DateEnd: at(48 * time.Hour)}
		bare := domain.Project{ID: "prj_bare", Name: "Bare", DateCreated: domain.T(apitest.Start.Add(time.Second))}
		if err := env.Store.ImportProjects(ctx, acc, []domain.Project{bare, summit}); err != nil {
			t.Fatal(err)
		}
		spring := domain.Campaign{ID: "cmp_spring", Name: "Spring", Description: str("Newsletter"), Kind: str("email"), State: str("running"),
			IsEnabled: true, ProjectID: str("prj_summit"), DateCreated: domain.T(apitest.Start), DateStart: at(time.Hour), DateEnd: at(2 * time.Hour)}
		draft := domain.Campaign{ID: "cmp_draft", Name: "Draft", DateCreated: domain.T(apitest.Start)}
		if err := env.Store.ImportCampaigns(ctx, acc, []domain.Campaign{spring, draft}); err != nil {
			t.Fatal(err)
		}

		got := env.Get(key, "/projects/prj_summit").Want(200).Map()
		want := map[string]any{"id": "prj_summit", "name": "Summit", "location": "Lisbon", "registration_url": "https://summit.example/register",
			"site_url": "https://summit.example", "date_created": "2026-11-21T10:00:00.000Z", "date_start": "2026-11-22T10:00:00.000Z",
			"date_end": "2026-11-23T10:00:00.000Z"}
		wantFields(t, got, want)
		wantFields(t, env.Get(key, "/projects/prj_bare").Want(200).Map(), map[string]any{"id": "prj_bare", "name": "Bare", "location": nil,
			"registration_url": nil, "site_url": nil, "date_created": "2026-11-21T10:00:01.000Z", "date_start": nil, "date_end": nil})

		got = env.Get(key, "/campaigns/cmp_spring").Want(200).Map()
		wantFields(t, got, map[string]any{"id": "cmp_spring", "name": "Spring", "description": "Newsletter", "kind": "email", "state": "running",
			"is_enabled": true, "project_id": "prj_summit", "date_created": "2026-11-21T10:00:00.000Z", "date_start": "2026-11-21T11:00:00.000Z",
			"date_end": "2026-11-21T12:00:00.000Z"})
		wantFields(t, env.Get(key, "/campaigns/cmp_draft").Want(200).Map(), map[string]any{"id": "cmp_draft", "name": "Draft", "description": nil,
			"kind": nil, "state": nil, "is_enabled": false, "project_id": nil, "date_created": "2026-11-21T10:00:00.000Z", "date_start": nil, "date_end": nil})

		projects := listOf[map[string]any](env, key, "/projects")
		if projects.Total != 2 || projects.Items[0]["id"] != "prj_summit" || projects.Items[1]["id"] != "prj_bare" {
			t.Fatalf("projects in date_created order: %+v", projects)
		}
		// Same date_created: the id decides.
		campaigns := listOf[map[string]any](env, key, "/campaigns?size=1")
		if campaigns.Total != 2 || len(campaigns.Items) != 1 || campaigns.Items[0]["id"] != "cmp_draft" {
			t.Fatalf("campaigns page 1 of size 1: %+v", campaigns)
		}
		campaigns = listOf[map[string]any](env, key, "/campaigns?size=1&page=2")
		if campaigns.Total != 2 || campaigns.Items[0]["id"] != "cmp_spring" {
			t.Fatalf("campaigns page 2 of size 1: %+v", campaigns)
		}
		if past := listOf[map[string]any](env, key, "/campaigns?page=3&size=1"); past.Total != 2 || len(past.Items) != 0 {
			t.Fatalf("past the end: %+v", past)
		}
		wantInvalid(t, env.Get(key, "/campaigns?size=500").Want(400).Problem(), "size")
		wantInvalid(t, env.Get(key, "/projects?page=-1").Want(400).Problem(), "page")

		wantNotFound(t, env.Get(key, "/campaigns/cmp_missing"), "campaign", "cmp_missing")
		wantNotFound(t, env.Get(key, "/projects/prj_missing"), "project", "prj_missing")
		wantNotFound(t, env.Get(otherKey, "/campaigns/cmp_spring"), "campaign", "cmp_spring")
		wantNotFound(t, env.Get(otherKey, "/projects/prj_summit"), "project", "prj_summit")
		if l := listOf[map[string]any](env, otherKey, "/campaigns"); l.Total != 0 || len(l.Items) != 0 {
			t.Fatalf("the second account lists campaigns %+v", l)
		}
		if l := listOf[map[string]any](env, otherKey, "/projects"); l.Total != 0 || len(l.Items) != 0 {
			t.Fatalf("the second account lists projects %+v", l)
		}
	})
}

// wantFields fails unless got holds exactly the keys of want with their values.
func wantFields(t *testing.T, got, want map[string]any) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("got keys %v, want %v", got, want)
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
}
