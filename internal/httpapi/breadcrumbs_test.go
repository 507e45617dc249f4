package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/httpapi/apitest"
	"github.com/pds-dev/pds/internal/testenv"
)

type breadcrumbView struct {
	ID         string  `json:"id"`
	Flavor     string  `json:"flavor"`
	CampaignID *string `json:"campaign_id"`
	ProjectID  *string `json:"project_id"`
	PersonID   string  `json:"person_id"`
	Email      *string `json:"email"`
	OccurredAt *string `json:"occurred_at"`
	CreatedAt  string  `json:"created_at"`
}

func appendCrumb(env *apitest.Env, key string, body map[string]any, status int, idempotencyKey ...string) breadcrumbView {
	env.T.Helper()
	req := apitest.Request{Method: http.MethodPost, Path: "/breadcrumbs", Key: key, Body: body}
	if len(idempotencyKey) > 0 {
		req.Header = http.Header{"Idempotency-Key": idempotencyKey}
	}
	var b breadcrumbView
	env.Do(req).Want(status).JSON(&b)
	return b
}

func crumbIDs(bs []breadcrumbView) []string {
	ids := []string{}
	for _, b := range bs {
		ids = append(ids, b.ID)
	}
	return ids
}

func TestBreadcrumbFlavors(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		key := env.Key(env.NewAccount())
		p := upsertPerson(env, key, map[string]any{"external_id": "f"}, 201)
		if len(domain.BreadcrumbFlavors) != 69 {
			t.Fatalf("%d flavors, the spec lists 69", len(domain.BreadcrumbFlavors))
		}
		for _, flavor := range domain.BreadcrumbFlavors {
			if b := appendCrumb(env, key, map[string]any{"flavor": flavor, "person_id": p.ID}, 201); b.Flavor != flavor {
				t.Fatalf("flavor %s stored as %s", flavor, b.Flavor)
			}
			if res := listOf[breadcrumbView](env, key, "/breadcrumbs?flavor="+flavor); res.Total != 1 || res.Items[0].Flavor != flavor {
				t.Fatalf("filter flavor=%s: %+v", flavor, res)
			}
		}
		for _, bad := range []any{"page-view", "PAGE_VIEW", "", 5, nil} {
			wantInvalid(t, env.Post(key, "/breadcrumbs", map[string]any{"flavor": bad, "person_id": p.ID}).Want(400).Problem(), "/flavor")
		}
		wantInvalid(t, env.Post(key, "/breadcrumbs", map[string]any{"person_id": p.ID}).Want(400).Problem(), "/flavor")
		wantInvalid(t, env.Get(key, "/breadcrumbs?flavor=page-view").Want(400).Problem(), "flavor")
		if res := listOf[breadcrumbView](env, key, "/breadcrumbs"); res.Total != 69 {
			t.Fatalf("refused breadcrumbs were stored: total %d", res.Total)
		}
	})
}

func TestAppendBreadcrumbResolvesItsPerson(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		acc := env.NewAccount()
		key := env.Key(acc)
		ada := upsertPerson(env, key, map[string]any{"external_id": "ada", "email": "ada@x.test"}, 201)
		bob := upsertPerson(env, key, map[string]any{"email": "bob@x.test", "f_id": "fb-bob"}, 201)

		env.Clock.Advance(time.Hour)
		for _, tc := range []struct {
			body map[string]any
			want string
		}{
			{map[string]any{"person_id": bob.ID, "external_id": "ada"}, bob.ID},
			{map[string]any{"external_id": "ada", "email": "bob@x.test"}, ada.ID},
			{map[string]any{"external_id": "nobody", "email": "BOB@x.test"}, bob.ID},
			{map[string]any{"email": "nobody@x.test", "f_id": "fb-bob"}, bob.ID},
		} {
			tc.body["flavor"] = "page_view"
			b := appendCrumb(env, key, tc.body, 201)
			if b.PersonID != tc.want || b.CreatedAt != nowText(env) || b.OccurredAt != nil || !strings.HasPrefix(b.ID, "bc_") {
				t.Fatalf("%v: %+v, want person %s", tc.body, b, tc.want)
			}
		}
		// Resolution only matched: identifiers unchanged, but both were seen now.
		for _, p := range []personView{ada, bob} {
			got := getPerson(env, key, p.ID)
			if deref(got.ExternalID) != deref(p.ExternalID) || deref(got.Email) != deref(p.Email) || got.DateLastSeen != nowText(env) {
				t.Fatalf("%s after breadcrumbs: %+v", p.ID, got)
			}
		}

		b := appendCrumb(env, key, map[string]any{"flavor": "form_submission", "email": "New@x.test", "external_id": "new", "f_id": "fb-new",
			"occurred_at": "2026-12-01T09:30:00+01:00"}, 201)
		if deref(b.OccurredAt) != "2026-12-01T08:30:00.000Z" || deref(b.Email) != "new@x.test" {
			t.Fatalf("breadcrumb for a new person: %+v", b)
		}
		made := env.Get(key, "/persons/"+b.PersonID+"?extended=true").Want(200).Map()
		if made["external_id"] != "new" || made["email"] != "new@x.test" || made["upsert_result"] != "created" || made["date_created"] != nowText(env) {
			t.Fatalf("person made by the breadcrumb: %v", made)
		}
		// That creation opened a person.created burst, like an upsert.
		if burst, err := env.Store.PendingBurst(context.Background(), acc, b.PersonID); err != nil || burst.Event != domain.EventPersonCreated {
			t.Fatalf("burst of the created person: %+v, %v", burst, err)
		}

		wantInvalid(t, env.Post(key, "/breadcrumbs", map[string]any{"flavor": "custom"}).Want(400).Problem(), "/person_id", "/external_id", "/email", "/f_id")
		wantInvalid(t, env.Post(key, "/breadcrumbs", map[string]any{"flavor": "custom", "email": nil, "person_id": nil}).Want(400).Problem(), "/person_id")
		wantInvalid(t, env.Post(key, "/breadcrumbs", map[string]any{"flavor": "custom", "external_id": ""}).Want(400).Problem(), "/external_id")
		wantInvalid(t, env.Post(key, "/breadcrumbs", map[string]any{"flavor": "custom", "email": "nope"}).Want(400).Problem(), "/email")
		for _, bad := range []string{"yesterday", "9999-12-31T23:59:59-01:00", "0000-01-01T00:00:00+01:00"} {
			// The last two are years 10000 and -1 in UTC, which RFC 3339 cannot write.
			wantInvalid(t, env.Post(key, "/breadcrumbs", map[string]any{"flavor": "custom", "person_id": ada.ID, "occurred_at": bad}).Want(400).Problem(), "/occurred_at")
		}
		wantInvalid(t, env.Post(key, "/breadcrumbs", map[string]any{"flavor": "custom", "person_id": ada.ID, "extra": 1}).Want(400).Problem(), "/extra")
		wantNotFound(t, env.Post(key, "/breadcrumbs", map[string]any{"flavor": "custom", "person_id": "per_missing"}), "person", "per_missing")

		other := env.Key(env.NewAccount())
		wantNotFound(t, env.Post(other, "/breadcrumbs", map[string]any{"flavor": "custom", "person_id": ada.ID}), "person", ada.ID)
		theirs := appendCrumb(env, other, map[string]any{"flavor": "custom", "external_id": "ada"}, 201)
		if theirs.PersonID == ada.ID {
			t.Fatal("another account's breadcrumb resolved to this account's person")
		}
		if res := listOf[breadcrumbView](env, other, "/breadcrumbs"); res.Total != 1 || res.Items[0].ID != theirs.ID {
			t.Fatalf("another account lists %+v", res)
		}
	})
}

func TestAppendBreadcrumbReferences(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		ctx := context.Background()
		acc, otherAcc := env.NewAccount(), env.NewAccount()
		key := env.Key(acc)
		for _, a := range []string{acc, otherAcc} {
			prj, cmp := "prj_"+a, "cmp_"+a
			if err := env.Store.ImportProjects(ctx, a, []domain.Project{{ID: prj, Name: "Summit"}}); err != nil {
				t.Fatal(err)
			}
			if err := env.Store.ImportCampaigns(ctx, a, []domain.Campaign{{ID: cmp, Name: "Spring", ProjectID: &prj}}); err != nil {
				t.Fatal(err)
			}
		}
		for _, ref := range []struct{ member, kind, id string }{
			{"campaign_id", "campaign", "cmp_missing"}, {"project_id", "project", "prj_missing"},
			{"campaign_id", "campaign", "cmp_" + otherAcc}, {"project_id", "project", "prj_" + otherAcc},
		} {
			body := map[string]any{"flavor": "donation", "external_id": "fresh", ref.member: ref.id}
			wantNotFound(t, env.Post(key, "/breadcrumbs", body), ref.kind, ref.id)
		}
		if res := listOf[personView](env, key, "/persons?external_id=fresh"); res.Total != 0 {
			t.Fatal("a refused breadcrumb created its person")
		}
		b := appendCrumb(env, key, map[string]any{"flavor": "donation", "external_id": "fresh", "campaign_id": "cmp_" + acc, "project_id": "prj_" + acc}, 201)
		if deref(b.CampaignID) != "cmp_"+acc || deref(b.ProjectID) != "prj_"+acc {
			t.Fatalf("references: %+v", b)
		}
	})
}

func TestBreadcrumbIdempotencyKey(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		key := env.Key(env.NewAccount())
		p := upsertPerson(env, key, map[string]any{"external_id": "r", "email": "r@x.test"}, 201)

		first := appendCrumb(env, key, map[string]any{"flavor": "email_send", "person_id": p.ID, "occurred_at": "2026-11-21T09:00:00Z"}, 201, "delivery-1")
		env.Clock.Advance(time.Minute)
		replay := appendCrumb(env, key, map[string]any{"flavor": "email_view", "email": "r@x.test"}, 200, "delivery-1")
		if replay.ID != first.ID || replay.Flavor != "email_view" || replay.OccurredAt != nil || replay.CreatedAt != first.CreatedAt ||
			deref(replay.Email) != "r@x.test" || replay.PersonID != p.ID {
			t.Fatalf("replay %+v of %+v", replay, first)
		}
		res := listOf[breadcrumbView](env, key, "/breadcrumbs")
		if res.Total != 1 || res.Items[0].ID != replay.ID || res.Items[0].Flavor != "email_view" || res.Items[0].OccurredAt != nil {
			t.Fatalf("after the replay: %+v", res)
		}
		if other := appendCrumb(env, key, map[string]any{"flavor": "email_view", "person_id": p.ID}, 201, "delivery-2"); other.ID == first.ID {
			t.Fatal("two keys gave one id")
		}
		appendCrumb(env, key, map[string]any{"flavor": "email_view", "person_id": p.ID}, 201)
		if res := listOf[breadcrumbView](env, key, "/breadcrumbs"); res.Total != 3 {
			t.Fatalf("total %d, want 3", res.Total)
		}

		for _, bad := range []string{strings.Repeat("k", 256), "tab\there", "é"} {
			req := apitest.Request{Method: http.MethodPost, Path: "/breadcrumbs", Key: key, Body: map[string]any{"flavor": "custom", "person_id": p.ID},
				Header: http.Header{"Idempotency-Key": {bad}}}
			wantInvalid(t, env.Do(req).Want(400).Problem(), "Idempotency-Key")
		}
		twice := apitest.Request{Method: http.MethodPost, Path: "/breadcrumbs", Key: key, Body: map[string]any{"flavor": "custom", "person_id": p.ID},
			Header: http.Header{"Idempotency-Key": {"a", "b"}}}
		wantInvalid(t, env.Do(twice).Want(400).Problem(), "Idempotency-Key")
		appendCrumb(env, key, map[string]any{"flavor": "custom", "person_id": p.ID}, 201, strings.Repeat("k", 255))

		// The same key in another account is another record.
		other := env.Key(env.NewAccount())
		q := upsertPerson(env, other, map[string]any{"external_id": "r"}, 201)
		if theirs := appendCrumb(env, other, map[string]any{"flavor": "custom", "person_id": q.ID}, 201, "delivery-1"); theirs.ID == first.ID {
			t.Fatal("two accounts share an idempotency id")
		}
		if got := listOf[breadcrumbView](env, key, "/breadcrumbs?size=100"); got.Total != 4 {
			t.Fatalf("another account's replay changed this account: total %d", got.Total)
		}
	})
}

func TestListBreadcrumbs(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		ctx := context.Background()
		acc := env.NewAccount()
		key := env.Key(acc)
		prj, cmp := "prj_1", "cmp_1"
		if err := env.Store.ImportProjects(ctx, acc, []domain.Project{{ID: prj, Name: "Summit"}}); err != nil {
			t.Fatal(err)
		}
		if err := env.Store.ImportCampaigns(ctx, acc, []domain.Campaign{{ID: cmp, Name: "Spring", ProjectID: &prj}}); err != nil {
			t.Fatal(err)
		}
		p := upsertPerson(env, key, map[string]any{"external_id": "p"}, 201)
		q := upsertPerson(env, key, map[string]any{"external_id": "q"}, 201)
		minute := func(m int) string { return apitest.Start.Add(time.Duration(m) * time.Minute).Format(domain.TimeLayout) }

		env.Clock.Advance(time.Hour)
		made := map[string]breadcrumbView{}
		for _, c := range []struct {
			name string
			body map[string]any
		}{
			{"p10", map[string]any{"flavor": "page_view", "person_id": p.ID, "occurred_at": minute(10)}},
			{"p20", map[string]any{"flavor": "page_view", "person_id": p.ID, "occurred_at": minute(20), "campaign_id": cmp}},
			{"q20", map[string]any{"flavor": "donation", "person_id": q.ID, "occurred_at": minute(20), "project_id": prj}},
			{"q30", map[string]any{"flavor": "donation", "person_id": q.ID, "occurred_at": minute(30), "campaign_id": cmp, "project_id": prj}},
			// No occurred_at: the activity time is now, minute 60.
			{"p60", map[string]any{"flavor": "email_send", "person_id": p.ID}},
		} {
			made[c.name] = appendCrumb(env, key, c.body, 201)
		}
		ids := func(names ...string) []string {
			out := []string{}
			for _, n := range names {
				out = append(out, made[n].ID)
			}
			return out
		}
		tie := ids("p20", "q20")
		slices.Sort(tie)
		slices.Reverse(tie)
		newestFirst := append(append(ids("p60", "q30"), tie...), ids("p10")...)

		var paged []string
		for page := 1; page <= 3; page++ {
			res := listOf[breadcrumbView](env, key, fmt.Sprintf("/breadcrumbs?size=2&page=%d", page))
			if res.Total != 5 {
				t.Fatalf("total %d", res.Total)
			}
			paged = append(paged, crumbIDs(res.Items)...)
		}
		if !slices.Equal(paged, newestFirst) {
			t.Fatalf("order %v, want %v", paged, newestFirst)
		}

		esc := url.QueryEscape
		for _, tc := range []struct {
			query string
			want  []string
		}{
			{"flavor=donation", ids("q30", "q20")},
			{"person_id=" + p.ID, ids("p60", "p20", "p10")},
			{"campaign_id=" + cmp, ids("q30", "p20")},
			{"project_id=" + prj, ids("q30", "q20")},
			{"person_id=" + q.ID + "&campaign_id=" + cmp + "&flavor=donation", ids("q30")},
			{"since=" + esc(minute(30)), ids("p60", "q30")},
			{"until=" + esc(minute(20)), append(append([]string{}, tie...), ids("p10")...)},
			{"since=" + esc(minute(20)) + "&until=" + esc(minute(20)), tie},
			{"since=" + esc("2026-11-21T11:20:00.001+01:00") + "&until=" + esc(minute(30)), ids("q30")},
			{"until=" + esc("2026-11-21T10:19:59.999Z"), ids("p10")},
			{"person_id=per_missing", nil},
			{"campaign_id=cmp_missing", nil},
		} {
			res := listOf[breadcrumbView](env, key, "/breadcrumbs?"+tc.query)
			if !slices.Equal(crumbIDs(res.Items), nonNil(tc.want)) || res.Total != len(tc.want) {
				t.Fatalf("%s: %v (total %d), want %v", tc.query, crumbIDs(res.Items), res.Total, tc.want)
			}
		}
		// A breadcrumb moved its person's last-seen time.
		if got := getPerson(env, key, p.ID); got.DateLastSeen != nowText(env) {
			t.Fatalf("date_last_seen %s after a breadcrumb at %s", got.DateLastSeen, nowText(env))
		}

		for _, bad := range []struct{ query, param string }{
			{"since=" + esc(minute(31)) + "&until=" + esc(minute(30)), "since"},
			{"since=yesterday", "since"},
			{"until=2026-11-21", "until"},
			{"person_id=", "person_id"},
			{"flavor=", "flavor"},
		} {
			wantInvalid(t, env.Get(key, "/breadcrumbs?"+bad.query).Want(400).Problem(), bad.param)
		}

		other := env.Key(env.NewAccount())
		for _, q := range []string{"", "person_id=" + p.ID, "campaign_id=" + cmp} {
			if res := listOf[breadcrumbView](env, other, "/breadcrumbs?"+q); res.Total != 0 || len(res.Items) != 0 {
				t.Fatalf("another account lists %v for %q", crumbIDs(res.Items), q)
			}
		}
	})
}

// Concurrent first deliveries of one Idempotency-Key make one record: one
// 201, every other a 200 replay.
func TestBreadcrumbIdempotencyKeyUnderConcurrency(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		key := env.Key(env.NewAccount())
		p := upsertPerson(env, key, map[string]any{"external_id": "race"}, 201)
		const n = 6
		statuses := make(chan int, n)
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses <- env.Do(apitest.Request{Method: http.MethodPost, Path: "/breadcrumbs", Key: key,
					Body: map[string]any{"flavor": "email_send", "person_id": p.ID}, Header: http.Header{"Idempotency-Key": {"once"}}}).Status
			}()
		}
		wg.Wait()
		close(statuses)
		count := map[int]int{}
		for s := range statuses {
			count[s]++
		}
		if count[201] != 1 || count[200] != n-1 {
			t.Fatalf("statuses %v, want one 201 and %d 200", count, n-1)
		}
		if res := listOf[breadcrumbView](env, key, "/breadcrumbs"); res.Total != 1 {
			t.Fatalf("%d records", res.Total)
		}
	})
}
