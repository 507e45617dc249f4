//go:build unix

package console_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pds-dev/pds/internal/console"
	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/internal/webhook"
	"github.com/pds-dev/pds/internal/webhook/webhooktest"
	"github.com/pds-dev/pds/pkg/webhookverify"
)

// seeded is what the browser test finds in the account.
type seeded struct {
	account, key string
	vip          domain.Tag
	ada          *domain.Person
}

// seed fills an account as a team's would be: tags, custom fields (one
// read-only, managed by an integration), persons some of whom hold tags,
// breadcrumbs, a campaign and its project.
func seed(t *testing.T, e *env) seeded {
	t.Helper()
	ctx := context.Background()
	acc := e.account()
	key, _ := e.key(acc, withErase()...)
	now := e.clock.Now()
	w := store.Write{Now: now, Window: time.Minute}
	var tags []domain.Tag
	for _, name := range []string{"VIP", "Donor", "Volunteer lead"} {
		tag, _, err := e.st.CreateTag(ctx, domain.Tag{ID: domain.NewID("tag"), AccountID: acc, Name: name, Context: "person",
			DateCreated: domain.T(now)})
		if err != nil {
			t.Fatal(err)
		}
		tags = append(tags, tag)
	}
	label := "Plan"
	fields := []domain.CustomField{
		{ID: domain.NewID("cf"), AccountID: acc, Collection: "Person", DataType: "str", Key: "plan", Label: &label, FormType: "text", DateCreated: domain.T(now)},
		{ID: domain.NewID("cf"), AccountID: acc, Collection: "Person", DataType: "list", Key: "languages", FormType: "text", DateCreated: domain.T(now)},
		{ID: domain.NewID("cf"), AccountID: acc, Collection: "Person", DataType: "str", Key: "crm_segment", FormType: "text", IsReadOnly: true, DateCreated: domain.T(now)},
		{ID: domain.NewID("cf"), AccountID: acc, Collection: "Person", DataType: "bool", Key: "newsletter", FormType: "text", DateCreated: domain.T(now)},
	}
	if err := e.st.ImportCustomFields(ctx, acc, fields); err != nil {
		t.Fatal(err)
	}
	site := "https://gala.example.org"
	project := domain.Project{ID: domain.NewID("prj"), AccountID: acc, Name: "Spring gala", SiteURL: &site, DateCreated: domain.T(now)}
	if err := e.st.ImportProjects(ctx, acc, []domain.Project{project}); err != nil {
		t.Fatal(err)
	}
	if err := e.st.ImportCampaigns(ctx, acc, []domain.Campaign{{ID: domain.NewID("cmp"), AccountID: acc, Name: "Gala invitations",
		IsEnabled: true, ProjectID: &project.ID, DateCreated: domain.T(now)}}); err != nil {
		t.Fatal(err)
	}
	var ada *domain.Person
	for i := range 30 {
		in := domain.PersonUpsert{
			ExternalID: domain.Opt[string]{Set: true, Value: fmt.Sprintf("crm-%d", i)},
			Email:      domain.Opt[string]{Set: true, Value: fmt.Sprintf("person.%d@example.org", i)},
			FirstName:  domain.Opt[string]{Set: true, Value: fmt.Sprintf("Person %d", i)},
		}
		if i == 0 {
			in.Email.Value, in.FirstName.Value = "ada@example.org", "Ada"
		}
		p, _, err := e.st.UpsertPerson(ctx, acc, in, w)
		if err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			if p, err = e.st.AddPersonTags(ctx, acc, p.ID, []string{tags[0].ID}, w); err != nil {
				t.Fatal(err)
			}
		}
		if i == 0 {
			ada = p
		}
	}
	for _, flavor := range []string{"page_view", "form_submission", "email_view"} {
		e.clock.Advance(time.Second)
		if _, _, err := e.st.AppendBreadcrumb(ctx, acc, domain.BreadcrumbInput{Flavor: flavor, PersonID: &ada.ID},
			store.Write{Now: e.clock.Now(), Window: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	return seeded{account: acc, key: key, vip: tags[0], ada: ada}
}

// TestConsoleInChromium drives the console as a person does, in headless
// Chromium, on each engine: signs in with the keyboard, browses and
// filters persons, opens one, edits it (and is shown the API's problem
// beside the field it refused), attaches a tag, uses the catalogue and the
// webhooks, erases a person with its identifiers suppressed and lifts a
// suppression, merges a duplicate into a person, and signs out. Every screen is held to axe-core (nothing serious or
// critical, in the light scheme and the dark) and must show no script
// error, no failed load and nothing the Content-Security-Policy refused;
// each is photographed. PDS_CONSOLE_SCREENSHOTS=DIR keeps the pictures in
// DIR/<engine>.
func TestConsoleInChromium(t *testing.T) {
	bin := testenv.Chromium(t)
	axe := axeOrSkip(t)
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		shots := t.TempDir()
		if dir := os.Getenv("PDS_CONSOLE_SCREENSHOTS"); dir != "" {
			shots = filepath.Join(dir, eng.Name)
			if err := os.MkdirAll(shots, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		rc := webhooktest.NewReceiver(t)
		e := newEnvWith(t, eng, webhooktest.Settings(rc))
		s := seed(t, e)
		worker, err := webhook.NewWorker(e.st, webhook.PersonRenderer{Persons: e.st, PublicURL: "https://pds.test"}, e.clock,
			e.hooks, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		b := newTab(t, bin, axe, shots)

		// Sign in, with the keyboard alone.
		b.open(e.url, "/console/")
		b.wantText("the sign-in page", "Sign in with an API key")
		b.check("sign-in")
		b.tabTo("input#key")
		b.do("type the key", chromedp.KeyEvent(s.key))
		if _, err := chromedp.RunResponse(b.ctx, chromedp.KeyEvent("\r")); err != nil {
			t.Fatalf("sign in with Enter: %v", err)
		}
		b.wantText("the overview", "Overview", s.account, "persons:write", "Rate budget")
		b.check("overview")

		// Persons: the window, a tag filter, a lookup.
		b.open(e.url, "/console/persons")
		// Newest first: Ada, seen last, then the others in turn.
		b.wantText("the persons", "30 seen within the last 30 days", "person.29@example.org")
		b.check("persons")
		b.do("filter by VIP", chromedp.Click(chromedp.CSS(`input[name=tag_ids][value="`+s.vip.ID+`"]`)))
		b.submit("show", `form[aria-label="Find persons"] button[type=submit]`)
		b.wantText("the VIP filter", "10 seen within")
		b.set("email", "ada@example.org")
		b.submit("search", `form[aria-label="Search persons"] button[type=submit]`)
		b.wantText("the search by email", "1 found", "ada@example.org")
		b.check("persons-search")
		b.open(e.url, "/console/persons")
		b.set("external_id", "crm-0")
		b.submit("search", `form[aria-label="Search persons"] button[type=submit]`)
		b.wantText("the search by external id", "1 found", "ada@example.org")

		// A person: open, edit (refused, then saved), attach a tag.
		b.submit("open Ada", `main table a[href="/console/persons/`+s.ada.ID+`"]`)
		b.wantText("Ada's page", "Attributes", "page_view", "3 in all", "crm_segment")
		b.check("person")
		b.set("f-email", "not an email")
		b.submit("save", `section[aria-labelledby=edit-heading] button[type=submit]`)
		b.wantText("the refused edit", "Bad Request (400)", "is not an email address")
		b.check("person-refused")
		b.set("f-email", "ada@example.org")
		b.set("f-last_name", "Lovelace")
		b.setNamed("custom_fields.plan", "gold")
		b.setNamed("custom_fields.languages", "en\nfr")
		b.setNamed("custom_fields.newsletter", "true") // a select, not a text box
		b.submit("save", `section[aria-labelledby=edit-heading] button[type=submit]`)
		b.wantText("the saved edit", "Saved.", "Lovelace", "gold")
		b.tabTo("select#attach")
		b.do("choose Donor", chromedp.SetValue(chromedp.ID("attach"), firstOption(t, e, s.account, "Donor")))
		b.submit("attach", `form[action$="/tags"] button[type=submit]`)
		b.wantText("the tagged person", "Tag attached.", "Donor")
		p, err := e.st.GetPerson(context.Background(), s.account, s.ada.ID)
		if err != nil || p.LastName == nil || *p.LastName != "Lovelace" || p.CustomFields["plan"] != "gold" || p.CustomFields["newsletter"] != "true" || len(p.TagIDs) != 2 {
			t.Fatalf("the person as stored after the console's edits: %+v, %v", p, err)
		}

		// The catalogue.
		b.open(e.url, "/console/tags")
		b.set("f-name", "Board")
		b.submit("create a tag", `form[method=post][action="/console/tags"] button[type=submit]`)
		b.wantText("the tags", "Created.", "Board", "4 live tags", "Persons")
		b.check("tags")
		b.open(e.url, "/console/custom-fields")
		b.wantText("the custom fields", "crm_segment", "read-only", "managed by an integration")
		b.check("custom-fields")
		b.open(e.url, "/console/campaigns")
		b.wantText("the campaigns", "Gala invitations")
		b.check("campaigns")
		b.open(e.url, "/console/projects")
		b.wantText("the projects", "Spring gala")
		b.check("projects")

		webhookFlow(t, e, b, s, rc, worker)
		breadcrumbsFlow(t, e, b, s)
		keysFlow(t, e, b, s)

		// At a phone's width nothing runs off the side.
		b.do("phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
		for _, path := range []string{"/console/", "/console/persons", "/console/persons/" + s.ada.ID, "/console/tags", "/console/webhooks"} {
			b.open(e.url, path)
			wide, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth + 1`))
			if err != nil || wide {
				t.Errorf("%s is wider than a phone's screen (%v)", path, err)
			}
		}
		b.do("desktop", chromedp.EmulateViewport(1280, 900))

		erasureFlow(t, e, b, s)
		mergeFlow(t, e, b, s)

		// Sign out.
		b.submit("sign out", `form.signout button`)
		b.wantText("the signed-out page", "Signed out.")
		b.open(e.url, "/console/persons")
		b.wantText("after signing out", "Sign in with an API key")

		// A one-time link (pds console link): its page says whom it signs
		// in as, and only its button does.
		_, linkKey := e.key(s.account, domain.ScopePersonsRead, domain.ScopeWebhooksRead)
		link, err := console.MintLink(context.Background(), e.st, s.account, linkKey.Hash, e.clock.Now(), 10*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		b.open(e.url, link)
		b.wantText("the link's page", "This one-time link signs in", s.account, linkKey.Prefix, "persons:read", "webhooks:read")
		b.check("link")
		b.submit("sign in with the link", `form[method=post] button[type=submit]`)
		b.wantText("the link's session", "Overview", linkKey.Prefix)
		b.submit("sign out", `form.signout button`)
		for _, f := range b.faults() {
			t.Errorf("after the last screen: %s", f)
		}
	})
}

// firstOption is the id of the account's tag named name.
func firstOption(t *testing.T, e *env, account, name string) string {
	t.Helper()
	tags, _, err := e.st.ListTags(context.Background(), account, nil, domain.PageRequest{Page: 1, Size: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range tags {
		if tag.Name == name {
			return tag.ID
		}
	}
	t.Fatalf("no tag %q", name)
	return ""
}

// webhookFlow subscribes a real HTTPS receiver through the console, watches
// a delivery of a person change appear in the log, opens its attempt,
// redelivers it, redelivers the failed ones since a time after counting
// them, rotates the secret and deletes the subscription.
func webhookFlow(t *testing.T, e *env, b *tab, s seeded, rc *webhooktest.Receiver, worker *webhook.Worker) {
	t.Helper()
	ctx := context.Background()
	deliver := func() {
		t.Helper()
		e.clock.Advance(2 * time.Minute) // past the coalescing window
		if err := worker.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
	}
	deliver() // the seed's bursts close before any subscription listens

	b.open(e.url, "/console/webhooks")
	b.wantText("the webhooks", "0 subscriptions", "New subscription")
	b.set("f-name", "CRM sync")
	b.set("f-target_url", rc.URL)
	b.do("choose Standard Webhooks", chromedp.Click(chromedp.CSS(`input[name=signature_scheme][value=standard-webhooks]`)))
	b.submit("subscribe", `form[method=post][action="/console/webhooks"] button[type=submit]`)
	b.wantText("the new subscription", "This is the only time the secret is shown", "whsec_", "webhook-signature")
	secret, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.ID("secret")))
	if err != nil {
		t.Fatal(err)
	}
	b.check("secret")
	hooks, _, err := e.st.ListWebhooks(ctx, s.account, domain.PageRequest{Page: 1, Size: 10})
	if err != nil || len(hooks) != 1 {
		t.Fatalf("subscriptions after subscribing: %d, %v", len(hooks), err)
	}
	hook := hooks[0]
	if hook.SignatureScheme != domain.SchemeStandardWebhooks {
		t.Fatalf("the subscription is signed by %q, not the scheme the form chose", hook.SignatureScheme)
	}

	// A change through the console is delivered, verified with the secret
	// the page showed.
	b.open(e.url, "/console/persons/"+s.ada.ID)
	b.set("f-phone", "+44 20 7946 0000")
	b.submit("save", `section[aria-labelledby=edit-heading] button[type=submit]`)
	deliver()
	got := rc.Requests()
	if len(got) != 1 {
		t.Fatalf("the receiver got %d deliveries, want 1", len(got))
	}
	if err := webhookverify.VerifyStandard(got[0].Header, got[0].Body, []string{secret}, e.clock.Now(), webhookverify.Options{}); err != nil {
		t.Fatalf("the delivery does not verify with the secret the console showed: %v", err)
	}
	deliveryID := got[0].Header.Get(webhookverify.HeaderDeliveryID)

	b.open(e.url, "/console/webhooks")
	b.wantText("the webhooks", "CRM sync", "active", "1 succeeded")
	b.check("webhooks")
	b.open(e.url, "/console/webhooks/"+hook.ID)
	b.wantText("the subscription", "1 delivery", deliveryID, "succeeded", "ada@example.org")
	b.check("webhook")
	b.do("filter failed", chromedp.SetValue(chromedp.ID("status"), "failed"))
	b.submit("filter", `form[aria-label="Filter the deliveries"] button[type=submit]`)
	b.wantText("the failed deliveries", "0 deliveries")

	// The attempt: the headers and body as sent, the answer.
	b.open(e.url, "/console/webhooks/"+hook.ID+"/deliveries/"+deliveryID)
	b.wantText("the delivery", "answered 204", "Service-Signature", "Service-Delivery-Id", "Webhook-Signature", `"event": "person.updated"`, "+44 20 7946 0000")
	b.check("delivery")
	b.submit("redeliver", `form[action$="/redeliver"] button[type=submit]`)
	b.wantText("the redelivery", "Redelivery queued")
	deliver()
	if got := rc.Requests(); len(got) != 2 || got[1].Header.Get(webhookverify.HeaderDeliveryID) != deliveryID {
		t.Fatalf("after the redelivery the receiver has %d requests", len(got))
	}

	// A delivery the receiver refuses fails; redelivering the failed ones
	// since a time shows their count first.
	rc.Always(http.StatusBadRequest)
	b.open(e.url, "/console/persons/"+s.ada.ID)
	b.set("f-phone", "+44 20 7946 0001")
	b.submit("save", `section[aria-labelledby=edit-heading] button[type=submit]`)
	deliver()
	rc.Always(http.StatusNoContent)
	b.open(e.url, "/console/webhooks/"+hook.ID)
	b.do("within the hour", chromedp.SetValue(chromedp.ID("redeliver-within"), "1h"))
	b.submit("count the failed", `form[action$="/redeliver-failed"] button[type=submit]`)
	b.wantText("the count", "1 failed deliveries", "Redeliver 1")
	b.check("redeliver-failed")
	b.submit("redeliver them", `form[method=post][action$="/redeliver-failed"] button[type=submit]`)
	b.wantText("the queued redelivery", "Every failed delivery since then is queued again")
	before := len(rc.Requests())
	deliver()
	if n := len(rc.Requests()); n != before+1 {
		t.Fatalf("redelivering the failed sent %d requests, want 1", n-before)
	}

	accountLogFlow(t, e, b, s, hook)

	// Rotation shows the new secret once, and the overlap; then delete.
	b.open(e.url, "/console/webhooks/"+hook.ID)
	b.submit("rotate", `form[action$="/rotate-secret"] button[type=submit]`)
	b.wantText("the rotation", "This is the only time the secret is shown", "whsec_")
	b.open(e.url, "/console/webhooks/"+hook.ID)
	b.do("open the delete", chromedp.Click(chromedp.CSS(`details summary`)))
	b.submit("delete", `form[action$="/delete"] button[type=submit]`)
	b.wantText("the deletion", "Deleted.", "0 subscriptions")
}

// erasureFlow erases Ada through the confirmation, with her identifiers
// suppressed: the persons list says so and no longer holds her, the
// suppressions screen lists their hashes, and one is lifted.
func erasureFlow(t *testing.T, e *env, b *tab, s seeded) {
	t.Helper()
	ctx := context.Background()
	b.open(e.url, "/console/persons/"+s.ada.ID)
	b.submit("erase", `section[aria-labelledby=erase-heading] button[type=submit]`)
	b.wantText("the confirmation", "What goes", s.ada.ID, "ada@example.org", "crm-0", "3 breadcrumbs", "Also suppress its identifiers")
	b.check("erase")
	b.do("also suppress", chromedp.Click(chromedp.CSS(`input[name=suppress]`)))
	b.submit("erase for good", `form[method=post][action$="/erase"] button[type=submit]`)
	b.wantText("the persons after the erasure", "Erased, and its identifiers are suppressed", "29 seen within the last 30 days")
	if strings.Contains(b.text(), "ada@example.org") {
		t.Error("the persons list still shows the erased person")
	}
	if _, err := e.st.GetPerson(ctx, s.account, s.ada.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("the erased person reads: %v", err)
	}
	sups, total, err := e.st.ListSuppressions(ctx, s.account, domain.PageRequest{Page: 1, Size: 10})
	if err != nil || total < 2 {
		t.Fatalf("suppressions after the erasure: %d, %v", total, err)
	}
	b.open(e.url, "/console/suppressions")
	b.wantText("the suppressions", fmt.Sprintf("%d suppressions", total), sups[0].Hash, sups[0].Kind)
	b.check("suppressions")
	// Found by the identifier it suppresses, posted, never in the URL.
	b.do("choose email", chromedp.SetValue(chromedp.ID("kind"), "email"))
	b.set("identifier", "Ada@Example.org")
	b.submit("search the suppressions", `form[aria-label="Search suppressions"] button[type=submit]`)
	b.wantText("the suppression found", "1 suppression of that email")
	b.check("suppressions-search")
	address, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`location.href`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.ToLower(address), "ada") {
		t.Errorf("the search put the identifier in the address: %s", address)
	}
	b.set("identifier", "not an address")
	b.submit("search the suppressions", `form[aria-label="Search suppressions"] button[type=submit]`)
	b.wantText("the refused search", "Bad Request (400)", "is not an email address")
	b.check("suppressions-search-refused")
	b.open(e.url, "/console/suppressions")
	b.submit("lift", `form[action="/console/suppressions/`+sups[0].ID+`/lift"] button[type=submit]`)
	b.wantText("the lifted suppression", "Suppression lifted", fmt.Sprintf("%d suppressions", total-1))
	if strings.Contains(b.text(), sups[0].Hash) {
		t.Error("the lifted suppression is still listed")
	}
}

// mergeFlow merges a duplicate into a person through its page: named by
// external id, the confirmation says what moves, and the merge shows the
// survivor with the duplicate's identifier and breadcrumbs; the merged id
// then answers the merged problem, which links to the survivor.
func mergeFlow(t *testing.T, e *env, b *tab, s seeded) {
	t.Helper()
	ctx := context.Background()
	kept, dup := duplicates(t, e, s.account, "grace")
	b.open(e.url, "/console/persons/"+kept.ID)
	b.do("name it by external id", chromedp.SetValue(chromedp.ID("merge-by"), "external_id"))
	b.set("merge-other", "crm-grace")
	b.submit("find the duplicate", `section[aria-labelledby=merge-heading] button[type=submit]`)
	b.wantText("the merge's confirmation", "What moves", dup.ID, "crm-grace: becomes this person's own",
		"grace.work@merge.test: becomes an alias of this person", "2 breadcrumbs")
	b.check("merge")
	b.set("other", "nobody@merge.test")
	b.do("name it by email", chromedp.SetValue(chromedp.ID("by"), "email"))
	b.submit("find nobody", `form[aria-label="Find the person to merge"] button[type=submit]`)
	b.wantText("the refused find", "Not Found", "404")
	b.check("merge-refused")
	b.set("other", "crm-grace")
	b.do("name it by external id", chromedp.SetValue(chromedp.ID("by"), "external_id"))
	b.submit("find the duplicate", `form[aria-label="Find the person to merge"] button[type=submit]`)
	b.submit("merge", `form[method=post][action$="/merge"] button[type=submit]`)
	b.wantText("the survivor", "Merged:", "grace@merge.test", "crm-grace", "2 in all")
	b.check("merged")
	var merged *domain.MergedError
	if _, err := e.st.GetPerson(ctx, s.account, dup.ID); !errors.As(err, &merged) || merged.MergedInto != kept.ID {
		t.Fatalf("the merged person reads: %v", err)
	}
	b.open(e.url, "/console/persons/"+dup.ID)
	b.wantText("the merged id", "was merged into", "Open the person it was merged into")
	b.submit("follow to the survivor", `div.problem a`)
	b.wantText("the survivor again", "grace@merge.test", "crm-grace")
}
