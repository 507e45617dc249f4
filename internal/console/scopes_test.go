package console_test

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/internal/webhook"
	"github.com/pds-dev/pds/internal/webhook/webhooktest"
	"github.com/pds-dev/pds/pkg/webhookverify"
)

// marked is an account whose every value that a page could show is a
// marker the test can look for: words no page prints of its own.
type marked struct {
	account                               string
	person, tag, field, campaign, project string
	hook, delivery                        string
	// markers are every value of the account a page could show, by what
	// it is; personData those of the person itself (a delivery's body
	// holds them too).
	markers    map[string]string
	personData []string
}

func seedMarked(t *testing.T, e *env, rc *webhooktest.Receiver) marked {
	t.Helper()
	ctx := context.Background()
	acc := e.account()
	now := e.clock.Now()
	w := store.Write{Now: now, Window: time.Minute}
	m := marked{account: acc, markers: map[string]string{
		"tag name": "Tagname-Mq4", "field key": "fieldkey_mq4", "field label": "Fieldlabel-Mq4",
		"field description": "Fielddescription-Mq4", "email": "email-mq4@example.org", "external id": "extid-mq4",
		"first name": "Firstname-Mq4", "last name": "Lastname-Mq4", "phone": "+44 20 7946 0444",
		"field value": "Fieldvalue-Mq4", "campaign name": "Campaignname-Mq4", "project name": "Projectname-Mq4",
		"project site": "https://site-mq4.example.org", "hook name": "Hookname-Mq4", "key name": "Keyname-Mq4",
	}}
	m.personData = []string{m.markers["email"], m.markers["external id"], m.markers["first name"], m.markers["last name"],
		m.markers["phone"], m.markers["field value"]}

	tag, _, err := e.st.CreateTag(ctx, domain.Tag{ID: domain.NewID("tag"), AccountID: acc, Name: m.markers["tag name"],
		Context: "person", DateCreated: domain.T(now)})
	if err != nil {
		t.Fatal(err)
	}
	label, description := m.markers["field label"], m.markers["field description"]
	field := domain.CustomField{ID: domain.NewID("cf"), AccountID: acc, Collection: "Person", DataType: "str",
		Key: m.markers["field key"], Label: &label, Description: &description, FormType: "text", DateCreated: domain.T(now)}
	if err := e.st.ImportCustomFields(ctx, acc, []domain.CustomField{field}); err != nil {
		t.Fatal(err)
	}
	site := m.markers["project site"]
	project := domain.Project{ID: domain.NewID("prj"), AccountID: acc, Name: m.markers["project name"], SiteURL: &site, DateCreated: domain.T(now)}
	if err := e.st.ImportProjects(ctx, acc, []domain.Project{project}); err != nil {
		t.Fatal(err)
	}
	campaign := domain.Campaign{ID: domain.NewID("cmp"), AccountID: acc, Name: m.markers["campaign name"], IsEnabled: true,
		ProjectID: &project.ID, DateCreated: domain.T(now)}
	if err := e.st.ImportCampaigns(ctx, acc, []domain.Campaign{campaign}); err != nil {
		t.Fatal(err)
	}
	hook := domain.Webhook{ID: domain.NewID("wh"), AccountID: acc, Name: m.markers["hook name"], TargetURL: rc.URL,
		Events: domain.WebhookEvents, IsActive: true, Secret: webhook.NewSecret(), SecretVersion: 1, CreatedAt: now, UpdatedAt: now}
	if err := e.st.CreateWebhook(ctx, hook); err != nil {
		t.Fatal(err)
	}
	// A key of the account besides the test's own: its name shows only on
	// the keys page, to a key that manages keys.
	keyName := m.markers["key name"]
	other, _, err := service.NewKey(service.KeyRequest{AccountID: acc, Scopes: []domain.Scope{domain.ScopeTagsRead}, Name: &keyName}, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.CreateKey(ctx, other); err != nil {
		t.Fatal(err)
	}
	value, _ := json.Marshal(m.markers["field value"])
	p, _, err := e.st.UpsertPerson(ctx, acc, domain.PersonUpsert{
		Email:        domain.Opt[string]{Set: true, Value: m.markers["email"]},
		ExternalID:   domain.Opt[string]{Set: true, Value: m.markers["external id"]},
		FirstName:    domain.Opt[string]{Set: true, Value: m.markers["first name"]},
		LastName:     domain.Opt[string]{Set: true, Value: m.markers["last name"]},
		Phone:        domain.Opt[string]{Set: true, Value: m.markers["phone"]},
		CustomFields: domain.Opt[map[string]json.RawMessage]{Set: true, Value: map[string]json.RawMessage{field.Key: value}},
	}, w)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.AddPersonTags(ctx, acc, p.ID, []string{tag.ID}, w); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.st.AppendBreadcrumb(ctx, acc, domain.BreadcrumbInput{Flavor: "page_view", PersonID: &p.ID, CampaignID: &campaign.ID,
		ProjectID: &project.ID}, w); err != nil {
		t.Fatal(err)
	}
	worker, err := webhook.NewWorker(e.st, webhook.PersonRenderer{Persons: e.st, PublicURL: "https://pds.test"}, e.clock,
		e.hooks, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(2 * time.Minute) // past the coalescing window
	if err := worker.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	reqs := rc.Requests()
	if len(reqs) != 1 {
		t.Fatalf("the receiver got %d deliveries, want 1", len(reqs))
	}
	m.person, m.tag, m.field, m.campaign, m.project = p.ID, tag.ID, field.ID, campaign.ID, project.ID
	m.hook, m.delivery = hook.ID, reqs[0].Header.Get(webhookverify.HeaderDeliveryID)
	for name, id := range map[string]string{"person id": m.person, "tag id": m.tag, "field id": m.field, "campaign id": m.campaign,
		"project id": m.project, "hook id": m.hook, "delivery id": m.delivery} {
		m.markers[name] = id
	}
	return m
}

// consolePage is a page of the console and the API requests that answer
// with what it shows: it may show what they answer a key, and nothing
// else. Its status is the API's: 200 when the key may make every one of
// required, else 403.
type consolePage struct {
	path     string
	required []apiCall
	// shows are further reads whose answers the page shows when the key
	// may make them.
	shows []apiCall
	// scope is the scope of a page that no API operation answers (the keys
	// page: keys:write); reveals are the markers it may show then, as
	// pds keys list would.
	scope   domain.Scope
	reveals []string
}

type apiCall struct{ method, path, body string }

func get(path string) apiCall { return apiCall{method: http.MethodGet, path: path} }

func consolePages(m marked, now time.Time) []consolePage {
	hook := "/webhooks/" + m.hook
	// The persons page lists those seen within the last 30 days.
	window := "/persons?updated_since=" + url.QueryEscape(now.Add(-30*24*time.Hour).Format(time.RFC3339))
	return []consolePage{
		{path: "/console/", required: []apiCall{get("/me")}},
		{path: "/console/persons", required: []apiCall{get(window)}, shows: []apiCall{get("/tags?context=person")}},
		{path: "/console/persons/" + m.person, required: []apiCall{get("/persons/" + m.person)},
			shows: []apiCall{get("/breadcrumbs?person_id=" + m.person), get("/tags?context=person"), get("/custom-fields?collection=Person")}},
		{path: "/console/tags", required: []apiCall{get("/tags")}},
		{path: "/console/custom-fields", required: []apiCall{get("/custom-fields")}},
		{path: "/console/campaigns", required: []apiCall{get("/campaigns")}},
		{path: "/console/projects", required: []apiCall{get("/projects")}},
		{path: "/console/webhooks", required: []apiCall{get("/webhooks")}},
		// A log shows each delivery's person's email beside its id to a
		// key that may read the person.
		{path: "/console/webhooks/" + m.hook, required: []apiCall{get(hook), get(hook + "/deliveries")},
			shows: []apiCall{get("/persons/" + m.person)}},
		{path: "/console/webhooks/" + m.hook + "/deliveries/" + m.delivery, required: []apiCall{get(hook), get(hook + "/deliveries/" + m.delivery)},
			shows: []apiCall{get("/persons/" + m.person)}},
		// The log of every subscription: the account has one, whose log it is.
		{path: "/console/deliveries", required: []apiCall{get("/webhooks"), get(hook + "/deliveries")},
			shows: []apiCall{get("/persons/" + m.person)}},
		{path: "/console/deliveries?status=succeeded&within=24h&webhook_id=" + m.hook, required: []apiCall{get("/webhooks"), get(hook + "/deliveries?status=succeeded")},
			shows: []apiCall{get("/persons/" + m.person)}},
		{path: "/console/breadcrumbs", required: []apiCall{get("/breadcrumbs")}},
		{path: "/console/breadcrumbs?flavor=page_view&person_id=" + m.person + "&campaign_id=" + m.campaign + "&project_id=" + m.project +
			"&since=2000-01-01T00%3A00&until=2100-01-01T00%3A00", required: []apiCall{get("/breadcrumbs?flavor=page_view&person_id=" + m.person)}},
		{path: "/console/keys", scope: domain.ScopeKeysWrite, reveals: []string{m.markers["key name"]}},
		// Erasing, which the confirmation offers, takes persons:erase (a
		// suppress the API refuses tells whether the key may, erasing
		// nothing); its identifiers show as Get Person answers them.
		{path: "/console/persons/" + m.person + "/erase", required: []apiCall{{method: http.MethodDelete, path: "/persons/" + m.person + "?suppress=maybe"}},
			shows: []apiCall{get("/persons/" + m.person)}},
		// Merging, which the page offers, takes persons:write (merging the
		// person into itself, which the API refuses, tells whether the key
		// may, merging nothing); the person kept shows its identifiers as
		// Get Person answers them.
		{path: "/console/persons/" + m.person + "/merge", required: []apiCall{{method: http.MethodPost, path: "/persons/" + m.person + "/merge",
			body: `{"from": "` + m.person + `"}`}}, shows: []apiCall{get("/persons/" + m.person)}},
		{path: "/console/suppressions", required: []apiCall{get("/suppressions")}},
		// Counting the failed deliveries is a read of the log; redelivering
		// them a write (a body it refuses tells whether the key may).
		{path: "/console/webhooks/" + m.hook + "/redeliver-failed?within=24h", required: []apiCall{
			get(hook), get(hook + "/deliveries?status=failed"),
			{method: http.MethodPost, path: hook + "/deliveries/redeliver-failed", body: `{}`}}},
	}
}

// call makes an API request with key: its status and its body, which for
// what the test compares holds the path too (ids a page shows from its
// own address).
func (e *env) call(key string, c apiCall) (int, string) {
	e.t.Helper()
	var body io.Reader
	if c.body != "" {
		body = strings.NewReader(c.body)
	}
	req, _ := http.NewRequest(c.method, e.url+c.path, body)
	req.Header.Set("Authorization", "Bearer "+key)
	if c.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, c.path + "\n" + string(raw)
}

// TestEveryPageShowsWhatTheAPIAnswersTheKey: a page shows exactly what the
// API answers the same key. Signed in with a key of each single scope, and
// with one of every scope, every console page answers as the API answers
// the reads it shows (200, or 403 when the key may not make one it
// needs), and shows no value of the account that those reads do not
// answer the key: a delivery's body only with persons:read as well as
// webhooks:read, a tag's name only with tags:read, a field's label only
// with custom_fields:read. What the person page's read answers of the
// person, it shows.
func TestEveryPageShowsWhatTheAPIAnswersTheKey(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rc := webhooktest.NewReceiver(t)
		e := newEnvWith(t, eng, webhooktest.Settings(rc))
		m := seedMarked(t, e, rc)
		keys := map[string][]domain.Scope{"every scope": domain.AllScopes}
		for _, sc := range domain.AllScopes {
			keys[string(sc)] = []domain.Scope{sc}
		}
		for name, scopes := range keys {
			t.Run(name, func(t *testing.T) {
				key, _ := e.key(m.account, scopes...)
				b := e.browser()
				b.signIn(key)
				for _, cp := range consolePages(m, e.clock.Now()) {
					want, answered := http.StatusOK, ""
					for _, c := range cp.required {
						status, body := e.call(key, c)
						switch {
						case status == http.StatusForbidden:
							want = http.StatusForbidden
						case status >= 300 && !(c.method != http.MethodGet && status == http.StatusBadRequest):
							t.Fatalf("%s %s: %d %s", c.method, c.path, status, body)
						}
						answered += body
					}
					if cp.scope != "" {
						if slices.Contains(scopes, cp.scope) {
							answered += strings.Join(cp.reveals, "\n")
						} else {
							want = http.StatusForbidden
						}
					}
					for _, c := range append(cp.shows, get("/me")) {
						if status, body := e.call(key, c); status == http.StatusOK {
							answered += body
						}
					}
					page := b.get(cp.path)
					if page.status != want {
						t.Errorf("%s: %d, the API answers %d", cp.path, page.status, want)
						continue
					}
					shown := html.UnescapeString(page.body)
					for what, marker := range m.markers {
						if strings.Contains(shown, marker) && !strings.Contains(answered, marker) {
							t.Errorf("%s shows the %s %q, which the API does not answer this key", cp.path, what, marker)
						}
					}
					if want != http.StatusOK {
						continue
					}
					// What the page's reads answer of the person, it shows: the
					// person page its attributes, its tags and its fields (by
					// id and key at least), a delivery's page its body when the
					// API's delivery has it.
					var ofThePerson []string
					switch {
					case strings.HasSuffix(cp.path, "/merge"):
						ofThePerson = []string{m.markers["email"], m.markers["external id"]}
					case strings.HasSuffix(cp.path, "/erase"):
						ofThePerson = []string{m.markers["email"], m.markers["external id"], m.markers["phone"]}
					case strings.HasPrefix(cp.path, "/console/persons/"):
						ofThePerson = append(m.personData[:len(m.personData):len(m.personData)], m.markers["tag id"], m.markers["field key"])
					case strings.Contains(cp.path, "/deliveries/"):
						ofThePerson = m.personData
					case strings.HasPrefix(cp.path, "/console/deliveries") || cp.path == "/console/webhooks/"+m.hook:
						ofThePerson = []string{m.markers["email"]}
					case cp.scope != "":
						ofThePerson = cp.reveals
					}
					for _, marker := range ofThePerson {
						if strings.Contains(answered, marker) && !strings.Contains(shown, marker) {
							t.Errorf("%s does not show %q, which the API answers this key", cp.path, marker)
						}
					}
				}
			})
		}
	})
}
