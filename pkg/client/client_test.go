package client_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/httpapi/apitest"
	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/internal/webhook"
	"github.com/pds-dev/pds/internal/webhook/webhooktest"
	"github.com/pds-dev/pds/pkg/client"
	"github.com/pds-dev/pds/pkg/webhookverify"
)

// contractChecked sends requests for the client, checks every response
// against the contract, as apitest does for the server's own tests, and
// records which operations were called.
type contractChecked struct {
	t      testing.TB
	c      *http.Client
	router routers.Router
	called map[string]bool // operation ids
}

func newContractChecked(t testing.TB, c *http.Client) *contractChecked {
	doc, err := apitest.Document()
	if err != nil {
		t.Fatal(err)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return &contractChecked{t: t, c: c, router: router, called: map[string]bool{}}
}

func (d *contractChecked) Do(req *http.Request) (*http.Response, error) {
	// The router matches the contract's server, http://localhost:8080.
	asDocumented, err := http.NewRequest(req.Method, "http://localhost:8080"+req.URL.RequestURI(), nil)
	if err != nil {
		return nil, err
	}
	if route, _, err := d.router.FindRoute(asDocumented); err == nil {
		d.called[route.Operation.OperationID] = true
	}
	res, err := d.c.Do(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return nil, err
	}
	res.Body = io.NopCloser(bytes.NewReader(body))
	if err := apitest.CheckResponse(req.Method, req.URL.RequestURI(), res.StatusCode, res.Header, body); err != nil {
		d.t.Errorf("%v", err)
	}
	return res, nil
}

// response is what every generated ...Response has.
type response interface {
	StatusCode() int
	GetBody() []byte
}

// want fails the test unless the call succeeded with the status.
func want(t *testing.T, what string, r response, err error, status int) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if r.StatusCode() != status {
		t.Fatalf("%s: status %d, want %d; body %s", what, r.StatusCode(), status, r.GetBody())
	}
}

// TestClientEndToEnd drives a real server on each engine through the
// generated client alone: every operation of every resource, problem
// documents decoded into the client's types, a list walked to its end, the
// export streamed, and a webhook delivery decoded into DeliveryBody.
func TestClientEndToEnd(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		rc := webhooktest.NewReceiver(t)
		cfg := apitest.DefaultConfig()
		cfg.Webhook = webhooktest.Settings(rc)
		env := apitest.New(t, eng, apitest.WithConfig(cfg))
		worker, err := webhook.NewWorker(env.Store, webhook.PersonRenderer{Persons: env.Store, PublicURL: cfg.PublicURL},
			env.Clock, cfg.Webhook, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		acc := env.NewAccount()
		key := env.Key(acc)
		doer := newContractChecked(t, env.HTTP.Client())
		c, err := client.NewClientWithResponses(env.HTTP.URL, client.WithKey(key), client.WithHTTPClient(doer))
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()

		// ---- operations and the key ----
		me, err := c.WhoamiWithResponse(ctx)
		want(t, "whoami", me, err, 200)
		if me.JSON200.AccountID != acc || len(me.JSON200.Scopes) != len(domain.AllScopes) || me.JSON200.RateLimit.Limit != 600 ||
			me.JSON200.Revoked || !me.JSON200.ExpiresAt.IsNull() {
			t.Fatalf("whoami %+v", me.JSON200)
		}
		health, err := c.HealthzWithResponse(ctx)
		want(t, "healthz", health, err, 200)
		ready, err := c.ReadyzWithResponse(ctx)
		want(t, "readyz", ready, err, 200)
		if health.JSON200.Status != "ok" || ready.JSON200.Status != "ready" {
			t.Fatalf("healthz %+v, readyz %+v", health.JSON200, ready.JSON200)
		}
		spec, err := c.OpenapiWithResponse(ctx)
		want(t, "openapi", spec, err, 200)
		if (*spec.JSON200)["openapi"] != "3.1.0" {
			t.Fatalf("openapi.json says openapi %v", (*spec.JSON200)["openapi"])
		}
		docs, err := c.DocsWithResponse(ctx)
		want(t, "docs", docs, err, 200)
		if !strings.HasPrefix(docs.ContentType(), "text/html") {
			t.Fatalf("docs content type %q", docs.ContentType())
		}
		script, err := c.DocsScriptWithResponse(ctx, nil)
		want(t, "docs script", script, err, 200)
		if !strings.HasPrefix(script.ContentType(), "text/javascript") || len(script.Body) == 0 {
			t.Fatalf("docs script: content type %q, %d bytes", script.ContentType(), len(script.Body))
		}

		// An unknown key: a 401 problem.
		anon, err := client.NewClientWithResponses(env.HTTP.URL, client.WithKey("pds_nope"), client.WithHTTPClient(doer))
		if err != nil {
			t.Fatal(err)
		}
		denied, err := anon.ListTagsWithResponse(ctx, nil)
		want(t, "list tags with an unknown key", denied, err, 401)
		if denied.ApplicationProblemJSON401 == nil || denied.ApplicationProblemJSON401.Status != 401 {
			t.Fatalf("401 problem %s", denied.Body)
		}

		// A webhook subscription from the start, so that the person changes
		// below are delivered.
		hook, err := c.CreateWebhookWithResponse(ctx, client.WebhookCreate{Name: "crm sync", TargetURL: rc.URL,
			Events:          client.WebhookEvents{client.WebhookEventPersonCreated, client.WebhookEventPersonUpdated},
			SignatureScheme: client.Ptr(client.SignatureSchemeStandardWebhooks),
			Headers:         &client.WebhookHeaders{"Authorization": "Bearer client-token-0123456789"},
			MaxPerSecond:    client.Ptr(1000), IncludeChanges: client.Ptr(true)})
		want(t, "create webhook", hook, err, 201)
		secret := hook.JSON201.Secret
		if !strings.HasPrefix(secret, "whsec_") || !hook.JSON201.IsActive || !hook.JSON201.DisabledReason.IsNull() ||
			hook.JSON201.SignatureScheme != client.SignatureSchemeStandardWebhooks || hook.JSON201.Headers["Authorization"] != "...6789" ||
			hook.JSON201.MaxPerSecond != 1000 || !hook.JSON201.IncludeChanges {
			t.Fatalf("webhook %+v", hook.JSON201)
		}
		hookID := hook.JSON201.ID

		// ---- tags ----
		vip, err := c.CreateTagWithResponse(ctx, client.TagCreate{Name: "vip", Context: client.TagContextPerson})
		want(t, "create tag", vip, err, 201)
		tagID := vip.JSON201.ID
		dup, err := c.CreateTagWithResponse(ctx, client.TagCreate{Name: "vip", Context: client.TagContextPerson})
		want(t, "create the same tag", dup, err, 409)
		if p := dup.ApplicationProblemJSON409; p == nil || p.ExistingID == nil || *p.ExistingID != tagID {
			t.Fatalf("409 problem %s", dup.Body)
		}
		renamed, err := c.UpdateTagWithResponse(ctx, tagID, client.TagUpdate{Name: client.Set("VIP")})
		want(t, "rename tag", renamed, err, 200)
		if renamed.JSON200.Name != "VIP" || renamed.JSON200.Context != client.TagContextPerson {
			t.Fatalf("renamed %+v", renamed.JSON200)
		}
		gotTag, err := c.GetTagWithResponse(ctx, tagID)
		want(t, "get tag", gotTag, err, 200)
		env.Clock.Advance(time.Second) // later in lists than vip
		gone, err := c.CreateTagWithResponse(ctx, client.TagCreate{Name: "lapsed", Context: client.TagContextPerson})
		want(t, "create tag", gone, err, 201)
		del, err := c.DeleteTagWithResponse(ctx, gone.JSON201.ID)
		want(t, "archive tag", del, err, 204)
		missing, err := c.GetTagWithResponse(ctx, gone.JSON201.ID)
		want(t, "get an archived tag", missing, err, 404)
		if missing.ApplicationProblemJSON404 == nil || !strings.Contains(missing.ApplicationProblemJSON404.Detail, gone.JSON201.ID) {
			t.Fatalf("404 problem %s", missing.Body)
		}
		revived, err := c.CreateTagWithResponse(ctx, client.TagCreate{Name: "lapsed", Context: client.TagContextPerson})
		want(t, "revive tag", revived, err, 200)
		if revived.JSON200.ID != gone.JSON201.ID {
			t.Fatalf("revived %+v, archived %+v", revived.JSON200, gone.JSON201)
		}
		tags, err := c.ListTagsWithResponse(ctx, &client.ListTagsParams{Context: client.Ptr(client.TagContextPerson)})
		want(t, "list tags", tags, err, 200)
		if tags.JSON200.Total != 2 || tags.JSON200.Items[0].ID != tagID {
			t.Fatalf("tags %+v", tags.JSON200)
		}

		// A 400 whose problem document points at the bad member.
		bad, err := c.CreateTagWithResponse(ctx, client.TagCreate{Name: "", Context: client.TagContextPerson})
		want(t, "create a tag without a name", bad, err, 400)
		if p := bad.ApplicationProblemJSON400; p == nil || len(p.Errors) == 0 || p.Errors[0].Pointer == nil || *p.Errors[0].Pointer != "/name" ||
			p.RequestID == nil || *p.RequestID != bad.HTTPResponse.Header.Get("X-Request-Id") {
			t.Fatalf("400 problem %s", bad.Body)
		}
		badQuery, err := c.ListTagsWithResponse(ctx, &client.ListTagsParams{Size: client.Ptr(101)})
		want(t, "list tags with size 101", badQuery, err, 400)
		if p := badQuery.ApplicationProblemJSON400; p == nil || len(p.Errors) != 1 || p.Errors[0].Parameter == nil || *p.Errors[0].Parameter != "size" {
			t.Fatalf("400 problem %s", badQuery.Body)
		}

		// ---- custom fields ----
		fields := map[string]string{}
		for k, dt := range map[string]client.CustomFieldDataType{"score": client.CustomFieldDataTypeInt, "plan": client.CustomFieldDataTypeStr,
			"interests": client.CustomFieldDataTypeList, "member": client.CustomFieldDataTypeBool, "amount": client.CustomFieldDataTypeMoney,
			"ratio": client.CustomFieldDataTypeFloat, "old": client.CustomFieldDataTypeStr} {
			f, err := c.CreateCustomFieldWithResponse(ctx, client.CustomFieldCreate{Collection: client.CustomFieldCollectionPerson, DataType: dt, Key: k})
			want(t, "create custom field "+k, f, err, 201)
			fields[k] = f.JSON201.ID
		}
		labelled, err := c.UpdateCustomFieldWithResponse(ctx, fields["score"], client.CustomFieldUpdate{Label: client.Set("Score"),
			Description: client.Null[string](), FormType: client.Set(client.CustomFieldFormTypeNumber)})
		want(t, "update custom field", labelled, err, 200)
		if labelled.JSON200.Label.MustGet() != "Score" || !labelled.JSON200.Description.IsNull() || labelled.JSON200.FormType != client.CustomFieldFormTypeNumber {
			t.Fatalf("labelled %+v", labelled.JSON200)
		}
		field, err := c.GetCustomFieldWithResponse(ctx, fields["score"])
		want(t, "get custom field", field, err, 200)
		archived, err := c.DeleteCustomFieldWithResponse(ctx, fields["old"])
		want(t, "archive custom field", archived, err, 204)
		fieldList, err := c.ListCustomFieldsWithResponse(ctx, &client.ListCustomFieldsParams{Collection: client.Ptr(client.CustomFieldCollectionPerson)})
		want(t, "list custom fields", fieldList, err, 200)
		if fieldList.JSON200.Total != 6 {
			t.Fatalf("custom fields %+v", fieldList.JSON200)
		}

		// ---- persons ----
		created, err := c.UpsertPersonWithResponse(ctx, client.PersonUpsert{
			ExternalID: client.Set("crm-1"), Email: client.Set("ada@example.com"), FirstName: client.Set("Ada"), Phone: client.Set("+44 20 7946 0000"),
			CustomFields: client.Set(client.CustomFieldInput{"score": client.Int(5), "plan": client.Text("gold"),
				"interests": client.List("maths", "engines"), "member": client.Bool(true), "amount": client.Text("19.90"), "ratio": client.Float(0.25)}),
		})
		want(t, "upsert a new person", created, err, 201)
		person := created.JSON201
		wantValues := client.CustomFieldValues{"score": "5", "plan": "gold", "interests": `["maths","engines"]`, "member": "true", "amount": "19.90", "ratio": "0.25"}
		if !strings.HasPrefix(person.ID, "per_") || person.Email.MustGet() != "ada@example.com" || !maps.Equal(person.CustomFields, wantValues) {
			t.Fatalf("created %+v", person)
		}
		matched, err := c.UpsertPersonWithResponse(ctx, client.PersonUpsert{ExternalID: client.Set("crm-1"), LastName: client.Set("Byron")})
		want(t, "upsert a known person", matched, err, 200)
		if matched.JSON200.ID != person.ID || matched.JSON200.FirstName.MustGet() != "Ada" || matched.JSON200.LastName.MustGet() != "Byron" {
			t.Fatalf("matched %+v", matched.JSON200)
		}
		patched, err := c.UpdatePersonWithResponse(ctx, person.ID, client.PersonUpdate{LastName: client.Set("Lovelace"), Phone: client.Null[string](),
			CustomFields: client.Set(client.CustomFieldInput{"plan": nil, "score": client.Text("6")})})
		want(t, "update person", patched, err, 200)
		if p := patched.JSON200; p.LastName.MustGet() != "Lovelace" || !p.Phone.IsNull() || p.CustomFields["score"] != "6" {
			t.Fatalf("patched %+v", p)
		}
		if _, held := patched.JSON200.CustomFields["plan"]; held {
			t.Fatal("a null custom field value did not remove the key")
		}
		tagged, err := c.AddPersonTagsWithResponse(ctx, person.ID, client.AddTags{TagIds: []string{tagID, revived.JSON200.ID}})
		want(t, "add person tags", tagged, err, 200)
		if !slices.Equal(tagged.JSON200.TagIds, []string{tagID, revived.JSON200.ID}) {
			t.Fatalf("tagged %+v", tagged.JSON200)
		}
		untagged, err := c.RemovePersonTagWithResponse(ctx, person.ID, revived.JSON200.ID)
		want(t, "remove person tag", untagged, err, 204)
		compact, err := c.GetPersonWithResponse(ctx, person.ID, nil)
		want(t, "get person", compact, err, 200)
		asCompact, err := compact.JSON200.AsPerson()
		if err != nil || asCompact.ID != person.ID || !slices.Equal(asCompact.TagIds, []string{tagID}) {
			t.Fatalf("compact %+v (%v)", asCompact, err)
		}
		extended, err := c.GetPersonWithResponse(ctx, person.ID, &client.GetPersonParams{Extended: client.Ptr(client.GetPersonParamsExtendedTrue)})
		want(t, "get extended person", extended, err, 200)
		ext, err := extended.JSON200.AsPersonExtended()
		if err != nil {
			t.Fatal(err)
		}
		score, err := ext.CustomData["score"].AsCustomDataValue1()
		if ext.Name.MustGet() != "Ada Lovelace" || ext.N0PersonURL != cfg.PublicURL+"/persons/"+person.ID || !slices.Equal(ext.Tags, []string{"VIP"}) ||
			err != nil || score != 6 {
			t.Fatalf("extended %+v (score %v, %v)", ext, score, err)
		}
		lookup, err := c.ListPersonsWithResponse(ctx, &client.ListPersonsParams{Email: client.Ptr("ADA@example.com")})
		want(t, "look a person up by email", lookup, err, 200)
		if lookup.JSON200.Total != 1 || lookup.JSON200.Items[0].ID != person.ID {
			t.Fatalf("lookup %+v", lookup.JSON200)
		}

		// A batch of 12 new persons and one refused item.
		batch := client.PersonBatch{}
		for i := range 12 {
			batch.Persons = append(batch.Persons, client.PersonUpsert{ExternalID: client.Set("batch-" + string(rune('a'+i)))})
		}
		batch.Persons = append(batch.Persons, client.PersonUpsert{CustomFields: client.Set(client.CustomFieldInput{"nope": client.Text("x")})})
		results, err := c.UpsertPersonsWithResponse(ctx, batch)
		want(t, "upsert persons", results, err, 200)
		rs := results.JSON200.Results
		if len(rs) != 13 || rs[0].Status != client.PersonBatchResultStatusN201 || rs[0].Person == nil {
			t.Fatalf("batch results %s", results.Body)
		}
		if last := rs[12]; last.Status != client.PersonBatchResultStatusN400 || last.Problem == nil || len(last.Problem.Errors) != 1 ||
			*last.Problem.Errors[0].Pointer != "/persons/12/custom_fields/nope" {
			t.Fatalf("refused item %s", results.Body)
		}

		conflict, err := c.UpdatePersonWithResponse(ctx, rs[0].Person.ID, client.PersonUpdate{Email: client.Set("ADA@example.com")})
		want(t, "take another person's email", conflict, err, 409)
		if p := conflict.ApplicationProblemJSON409; p == nil || p.ExistingID == nil || *p.ExistingID != person.ID {
			t.Fatalf("409 problem %s", conflict.Body)
		}

		// Every person, walked page by page to the end of the window.
		var walked []string
		for page := 1; ; page++ {
			res, err := c.ListPersonsWithResponse(ctx, &client.ListPersonsParams{UpdatedSince: client.Ptr(apitest.Start.Add(-time.Hour)),
				Page: client.Ptr(page), Size: client.Ptr(5)})
			want(t, "list persons", res, err, 200)
			for _, p := range res.JSON200.Items {
				walked = append(walked, p.ID)
			}
			if page*res.JSON200.Size >= res.JSON200.Total {
				if len(walked) != res.JSON200.Total || page != 3 {
					t.Fatalf("walked %d persons in %d pages, total %d", len(walked), page, res.JSON200.Total)
				}
				break
			}
		}
		if len(walked) != 13 {
			t.Fatalf("walked %v", walked)
		}

		// The export, streamed through the plain client, one Person a line.
		raw, err := c.ClientInterface.(*client.Client).ExportPersons(ctx, &client.ExportPersonsParams{})
		if err != nil || raw.StatusCode != 200 || raw.Header.Get("Content-Type") != "application/x-ndjson" {
			t.Fatalf("export: %v %v", raw, err)
		}
		var exported []string
		lines := bufio.NewScanner(raw.Body)
		for lines.Scan() {
			var p client.Person
			if err := json.Unmarshal(lines.Bytes(), &p); err != nil {
				t.Fatalf("export line %s: %v", lines.Bytes(), err)
			}
			exported = append(exported, p.ID)
		}
		raw.Body.Close()
		if !slices.Equal(exported, slices.Sorted(slices.Values(walked))) {
			t.Fatalf("exported %v, listed %v", exported, walked)
		}

		// ---- campaigns and projects (imported, read through the API) ----
		if err := env.Store.ImportProjects(ctx, acc, []domain.Project{{ID: "prj_summit", Name: "Summit", Location: client.Ptr("Lisbon")}}); err != nil {
			t.Fatal(err)
		}
		if err := env.Store.ImportCampaigns(ctx, acc, []domain.Campaign{{ID: "cmp_spring", Name: "Spring", ProjectID: client.Ptr("prj_summit"), IsEnabled: true}}); err != nil {
			t.Fatal(err)
		}
		projects, err := c.ListProjectsWithResponse(ctx, nil)
		want(t, "list projects", projects, err, 200)
		project, err := c.GetProjectWithResponse(ctx, "prj_summit")
		want(t, "get project", project, err, 200)
		campaigns, err := c.ListCampaignsWithResponse(ctx, &client.ListCampaignsParams{Size: client.Ptr(10)})
		want(t, "list campaigns", campaigns, err, 200)
		campaign, err := c.GetCampaignWithResponse(ctx, "cmp_spring")
		want(t, "get campaign", campaign, err, 200)
		if projects.JSON200.Total != 1 || project.JSON200.Location.MustGet() != "Lisbon" || campaigns.JSON200.Total != 1 ||
			campaign.JSON200.ProjectID.MustGet() != "prj_summit" || !campaign.JSON200.DateStart.IsNull() {
			t.Fatalf("projects %+v, campaigns %+v", project.JSON200, campaign.JSON200)
		}

		// ---- breadcrumbs ----
		occurred := apitest.Start.Add(-10 * time.Minute)
		crumb := client.BreadcrumbCreate{Flavor: client.BreadcrumbFlavorEmailLinkClick, PersonID: client.Set(person.ID),
			CampaignID: client.Set("cmp_spring"), ProjectID: client.Set("prj_summit"), OccurredAt: client.Set(occurred)}
		idem := &client.AppendBreadcrumbParams{IdempotencyKey: client.Ptr("click-1")}
		appended, err := c.AppendBreadcrumbWithResponse(ctx, idem, crumb)
		want(t, "append breadcrumb", appended, err, 201)
		replayed, err := c.AppendBreadcrumbWithResponse(ctx, idem, crumb)
		want(t, "replay breadcrumb", replayed, err, 200)
		if replayed.JSON200.ID != appended.JSON201.ID || !appended.JSON201.OccurredAt.MustGet().Equal(occurred) {
			t.Fatalf("appended %+v, replayed %+v", appended.JSON201, replayed.JSON200)
		}
		crumbs, err := c.ListBreadcrumbsWithResponse(ctx, &client.ListBreadcrumbsParams{PersonID: client.Ptr(person.ID),
			Flavor: client.Ptr(client.BreadcrumbFlavorEmailLinkClick), Since: client.Ptr(occurred), Until: client.Ptr(occurred)})
		want(t, "list breadcrumbs", crumbs, err, 200)
		if crumbs.JSON200.Total != 1 || crumbs.JSON200.Items[0].ID != appended.JSON201.ID {
			t.Fatalf("breadcrumbs %+v", crumbs.JSON200)
		}

		// ---- webhooks: the deliveries of the changes above ----
		env.Clock.Advance(6 * time.Minute) // past every burst's window
		if err := worker.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		received := rc.WaitFor(t, 13, 10*time.Second)
		var (
			body client.DeliveryBody
			data client.PersonExtended
		)
		for _, r := range received {
			if err := json.Unmarshal(r.Body, &body); err != nil {
				t.Fatalf("delivery %s: %v", r.Body, err)
			}
			// data is the extended person, or for person.deleted its id
			// and date_deleted alone.
			if data, err = body.Data.AsPersonExtended(); err != nil {
				t.Fatalf("delivery %s: %v", r.Body, err)
			}
			if data.ID == person.ID {
				if err := webhookverify.VerifyStandard(r.Header, r.Body, []string{secret}, env.Clock.Now(), webhookverify.Options{}); err != nil {
					t.Fatal(err)
				}
				break
			}
		}
		if data.ID != person.ID || body.Event != client.WebhookEventPersonCreated || data.Name.MustGet() != "Ada Lovelace" ||
			body.Changes == nil || len(body.Changes) != 0 {
			t.Fatalf("delivery %+v", body)
		}
		deliveries, err := c.ListDeliveriesWithResponse(ctx, hookID, &client.ListDeliveriesParams{Size: client.Ptr(100)})
		want(t, "list deliveries", deliveries, err, 200)
		if deliveries.JSON200.Total != 13 {
			t.Fatalf("deliveries %+v", deliveries.JSON200)
		}
		madeAt := body.Created
		filtered, err := c.ListDeliveriesWithResponse(ctx, hookID, &client.ListDeliveriesParams{
			Status: client.Ptr(client.ListDeliveriesParamsStatusSucceeded), Event: client.Ptr(client.WebhookEventPersonCreated),
			PersonID: client.Ptr(person.ID), Since: client.Ptr(madeAt), Until: client.Ptr(madeAt)})
		want(t, "list deliveries, filtered", filtered, err, 200)
		if filtered.JSON200.Total != 1 || filtered.JSON200.Items[0].ID != body.ID {
			t.Fatalf("filtered deliveries %+v", filtered.JSON200)
		}
		delivery, err := c.GetDeliveryWithResponse(ctx, hookID, body.ID)
		want(t, "get delivery", delivery, err, 200)
		if d := delivery.JSON200; d.Status != client.DeliveryDetailStatusSucceeded || len(d.AttemptLog) != 1 || d.AttemptLog[0].StatusCode.MustGet() != 204 ||
			d.AttemptLog[0].RequestHeaders["Service-Delivery-Id"] != body.ID {
			t.Fatalf("delivery %+v", d)
		}
		// A key with persons:read reads the body as sent, decoded as the
		// receiver decoded it.
		if d := delivery.JSON200; d.Body == nil || d.Body.ID != body.ID || dataID(d.Body.Data) != person.ID {
			t.Fatalf("the delivery's body %+v, want the one the receiver got", d.Body)
		}
		again, err := c.RedeliverWithResponse(ctx, hookID, body.ID)
		want(t, "redeliver", again, err, 202)
		if again.JSON202.Status != client.DeliveryStatusPending {
			t.Fatalf("redelivered %+v", again.JSON202)
		}

		failedSince, err := c.ListDeliveriesWithResponse(ctx, hookID, &client.ListDeliveriesParams{
			Status: client.Ptr(client.ListDeliveriesParamsStatusFailed), Since: client.Ptr(madeAt)})
		want(t, "count failed deliveries", failedSince, err, 200)
		requeued, err := c.RedeliverFailedWithResponse(ctx, hookID, client.RedeliverFailedBody{Since: madeAt})
		want(t, "redeliver failed", requeued, err, 202)
		if requeued.JSON202.Redelivered != failedSince.JSON200.Total {
			t.Fatalf("redelivered %d, counted %d", requeued.JSON202.Redelivered, failedSince.JSON200.Total)
		}

		off, err := c.UpdateWebhookWithResponse(ctx, hookID, client.WebhookUpdate{IsActive: client.Ptr(false),
			SignatureScheme: client.Ptr(client.SignatureSchemePds)})
		want(t, "switch webhook off", off, err, 200)
		if off.JSON200.IsActive || off.JSON200.DisabledReason.MustGet() != client.WebhookDisabledReasonManual ||
			off.JSON200.SignatureScheme != client.SignatureSchemePds {
			t.Fatalf("switched off %+v", off.JSON200)
		}
		refused, err := c.RedeliverFailedWithResponse(ctx, hookID, client.RedeliverFailedBody{Since: madeAt})
		want(t, "redeliver failed of an inactive subscription", refused, err, 409)
		if refused.ApplicationProblemJSON409 == nil {
			t.Fatalf("409 problem %s", refused.Body)
		}
		rotated, err := c.RotateWebhookSecretWithResponse(ctx, hookID)
		want(t, "rotate secret", rotated, err, 200)
		if rotated.JSON200.Secret == secret {
			t.Fatal("the rotated secret is the old one")
		}
		read, err := c.GetWebhookWithResponse(ctx, hookID)
		want(t, "get webhook", read, err, 200)
		hooks, err := c.ListWebhooksWithResponse(ctx, nil)
		want(t, "list webhooks", hooks, err, 200)
		if hooks.JSON200.Total != 1 || read.JSON200.SecretHint != "whsec_..."+rotated.JSON200.Secret[len(rotated.JSON200.Secret)-4:] {
			t.Fatalf("webhooks %+v, read %+v", hooks.JSON200, read.JSON200)
		}
		removed, err := c.DeleteWebhookWithResponse(ctx, hookID)
		want(t, "delete webhook", removed, err, 204)
		after, err := c.GetDeliveryWithResponse(ctx, hookID, body.ID)
		want(t, "get a delivery of a deleted webhook", after, err, 404)
		if after.ApplicationProblemJSON404 == nil {
			t.Fatalf("404 problem %s", after.Body)
		}

		// ---- erasure and suppressions ----
		doomed, err := c.UpsertPersonWithResponse(ctx, client.PersonUpsert{ExternalID: client.Set("crm-erase"), Email: client.Set("erase@example.com")})
		want(t, "upsert a person to erase", doomed, err, 201)
		erased, err := c.ErasePersonWithResponse(ctx, doomed.JSON201.ID, &client.ErasePersonParams{Suppress: client.Ptr(true)})
		want(t, "erase a person", erased, err, 204)
		again2, err := c.ErasePersonWithResponse(ctx, doomed.JSON201.ID, nil)
		want(t, "erase a person twice", again2, err, 404)
		suppressed, err := c.UpsertPersonWithResponse(ctx, client.PersonUpsert{Email: client.Set("Erase@Example.com")})
		want(t, "upsert a suppressed email", suppressed, err, 409)
		p := suppressed.ApplicationProblemJSON409
		if p == nil || p.Type != "urn:pds:problem:suppressed" || len(p.Errors) != 1 || p.Errors[0].SuppressionID == nil {
			t.Fatalf("suppressed %s", suppressed.Body)
		}
		found, err := c.ListSuppressionsWithResponse(ctx, &client.ListSuppressionsParams{Email: client.Ptr("ERASE@example.com")})
		want(t, "find the suppression of an email", found, err, 200)
		if found.JSON200.Total != 1 || found.JSON200.Items[0].ID != *p.Errors[0].SuppressionID {
			t.Fatalf("the suppression of the email %+v, the 409 named %s", found.JSON200, *p.Errors[0].SuppressionID)
		}
		sups, err := c.ListSuppressionsWithResponse(ctx, nil)
		want(t, "list suppressions", sups, err, 200)
		if sups.JSON200.Total != 2 {
			t.Fatalf("suppressions %+v", sups.JSON200)
		}
		for _, sup := range sups.JSON200.Items {
			lifted, err := c.DeleteSuppressionWithResponse(ctx, sup.ID)
			want(t, "lift a suppression", lifted, err, 204)
		}
		back, err := c.UpsertPersonWithResponse(ctx, client.PersonUpsert{Email: client.Set("erase@example.com")})
		want(t, "upsert a lifted email", back, err, 201)

		// Export, then follow: the feed from the export's cursor holds
		// the change made after it, and nothing the export held.
		snapshot, err := c.ClientInterface.(*client.Client).ExportPersons(ctx, &client.ExportPersonsParams{})
		if err != nil || snapshot.StatusCode != 200 {
			t.Fatalf("export: %v %v", snapshot, err)
		}
		exportCursor := snapshot.Header.Get("Pds-Changes-Cursor")
		snapshot.Body.Close()
		changed, err := c.UpsertPersonWithResponse(ctx, client.PersonUpsert{ExternalID: client.Set("followed")})
		want(t, "upsert after the export", changed, err, 201)
		follow, stopFollowing := context.WithCancel(ctx)
		var followed []string
		for change, err := range c.FollowChanges(follow, exportCursor, 1) {
			if err != nil {
				t.Fatalf("follow the feed: %v", err)
			}
			if change.Person == nil || change.Cursor == "" {
				t.Fatalf("a change without its person or cursor: %+v", change)
			}
			followed = append(followed, change.Person.ID)
			stopFollowing()
		}
		stopFollowing()
		if !slices.Equal(followed, []string{changed.JSON201.ID}) {
			t.Fatalf("followed %v from the export's cursor, want the one change after it", followed)
		}

		// Two persons that are one: the second merged into the first, whose
		// aliases then hold the second's external id.
		survivor, err := c.UpsertPersonWithResponse(ctx, client.PersonUpsert{ExternalID: client.Set("twin-a")})
		want(t, "upsert the person kept", survivor, err, 201)
		twin, err := c.UpsertPersonWithResponse(ctx, client.PersonUpsert{ExternalID: client.Set("dup-b")})
		want(t, "upsert its duplicate", twin, err, 201)
		merged, err := c.MergePersonsWithResponse(ctx, survivor.JSON201.ID, client.MergeRequest{From: twin.JSON201.ID})
		want(t, "merge", merged, err, 200)
		if merged.JSON200.ID != survivor.JSON201.ID {
			t.Fatalf("the merge answered %s, want the person kept, %s", merged.JSON200.ID, survivor.JSON201.ID)
		}
		aliases, err := c.ListPersonAliasesWithResponse(ctx, survivor.JSON201.ID, nil)
		want(t, "aliases", aliases, err, 200)
		if items := aliases.JSON200.Items; len(items) != 1 || items[0].From != twin.JSON201.ID || items[0].Value != "dup-b" {
			t.Fatalf("aliases after the merge: %+v, want dup-b from %s", items, twin.JSON201.ID)
		}

		doc, err := apitest.Document()
		if err != nil {
			t.Fatal(err)
		}
		for path, item := range doc.Paths.Map() {
			for method, op := range item.Operations() {
				if !doer.called[op.OperationID] {
					t.Errorf("%s %s (%s) was never called through the client", method, path, op.OperationID)
				}
			}
		}
	})
}

// dataID is the person id a delivery body's data names, whichever its shape.
func dataID(d client.DeliveryBody_Data) string {
	var v struct {
		ID string `json:"id"`
	}
	b, _ := d.MarshalJSON()
	_ = json.Unmarshal(b, &v)
	return v.ID
}
