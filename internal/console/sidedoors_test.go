package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/internal/webhook/webhooktest"
)

// TestSideDoorsShowOnlyWhatTheScopesRead: three pages that showed what the
// key's scopes do not read. The person's edit form, to a key without
// custom_fields:read, names no field the person holds no value for (Get
// Person answers only held values, by key); the erasure's confirmation, to
// a key with persons:erase alone, counts nothing (each count is a read of
// persons, breadcrumbs or the delivery log); the count of failed
// deliveries to redeliver is the log's, which webhooks:write alone does
// not read.
func TestSideDoorsShowOnlyWhatTheScopesRead(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rc := webhooktest.NewReceiver(t)
		e := newEnvWith(t, eng, webhooktest.Settings(rc))
		acc := e.account()
		p := erasable(t, e, acc, "side@door.test")
		if err := e.st.ImportCustomFields(context.Background(), acc, []domain.CustomField{{ID: domain.NewID("cf"), AccountID: acc,
			Collection: "Person", DataType: "str", Key: "unheld_mq5", FormType: "text", DateCreated: domain.T(e.clock.Now())}}); err != nil {
			t.Fatal(err)
		}

		editor, _ := e.key(acc, domain.ScopePersonsRead, domain.ScopePersonsWrite)
		b := e.browser()
		b.signIn(editor)
		page := b.get("/console/persons/" + p.ID)
		if page.status != http.StatusOK || strings.Contains(page.body, "unheld_mq5") || !strings.Contains(page.body, "gold") {
			t.Errorf("persons:read,persons:write: %d; the page names the field the person does not hold: %v",
				page.status, strings.Contains(page.body, "unheld_mq5"))
		}
		// A form naming the field anyway changes nothing of it.
		b.post("/console/persons/"+p.ID, url.Values{"csrf": {b.csrf("/console/persons/" + p.ID)}, "first_name": {"Side"},
			"custom_fields.unheld_mq5": {"set"}})
		if got, _ := e.st.GetPerson(context.Background(), acc, p.ID); got == nil || got.CustomFields["unheld_mq5"] != "" {
			t.Errorf("a form without the field's definition set it: %+v", got)
		}
		reader, _ := e.key(acc, domain.ScopePersonsRead, domain.ScopePersonsWrite, domain.ScopeCustomFieldsRead)
		rb := e.browser()
		rb.signIn(reader)
		if page := rb.get("/console/persons/" + p.ID); !strings.Contains(page.body, "unheld_mq5") {
			t.Error("a key with custom_fields:read is not offered every field")
		}

		eraser, _ := e.key(acc, domain.ScopePersonsErase)
		eb := e.browser()
		eb.signIn(eraser)
		text := tagsOut.ReplaceAllString(eb.get("/console/persons/"+p.ID+"/erase").body, "")
		for _, count := range []string{"2 tag links", "1 custom field values", "3 breadcrumbs", "0 pending deliveries"} {
			if strings.Contains(text, count) {
				t.Errorf("persons:erase alone is told %q", count)
			}
		}
		counter, _ := e.key(acc, domain.ScopePersonsErase, domain.ScopePersonsRead, domain.ScopeBreadcrumbsRead, domain.ScopeWebhooksRead)
		cb := e.browser()
		cb.signIn(counter)
		text = tagsOut.ReplaceAllString(cb.get("/console/persons/"+p.ID+"/erase").body, "")
		for _, count := range []string{"2 tag links", "1 custom field values", "3 breadcrumbs", "0 pending deliveries"} {
			if !strings.Contains(text, count) {
				t.Errorf("a key that reads what is counted is not told %q", count)
			}
		}
	})
}

// TestConsoleDirectsDeliveriesByTheAPIsRule: the console asks what the API
// asks of a key that would send deliveries where it chooses, or again: a
// key with webhooks:read and webhooks:write alone is offered only
// person.deleted, and its posts that would subscribe to person events,
// retarget a subscription to them or redeliver one are the API's 403,
// changing nothing; a rename still saves.
func TestConsoleDirectsDeliveriesByTheAPIsRule(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		legit, attacker := webhooktest.NewReceiver(t), webhooktest.NewReceiver(t)
		e := newEnvWith(t, eng, webhooktest.Settings(legit, attacker))
		m := seedMarked(t, e, legit)
		key, _ := e.key(m.account, domain.ScopeWebhooksRead, domain.ScopeWebhooksWrite)
		b := e.browser()
		b.signIn(key)
		list := b.get("/console/webhooks")
		if strings.Contains(list.body, `value="person.updated"`) || !strings.Contains(list.body, `value="person.deleted"`) {
			t.Errorf("the new subscription form offers events whose bodies the key may not read")
		}
		hookPath := "/console/webhooks/" + m.hook
		token := b.csrf(hookPath)
		for name, post := range map[string]struct {
			path string
			form url.Values
		}{
			"subscribe": {"/console/webhooks", url.Values{"name": {"mine"}, "target_url": {attacker.URL}, "events": {"person.updated"}}},
			"retarget": {hookPath, url.Values{"name": {m.markers["hook name"]}, "target_url": {attacker.URL},
				"events": domain.WebhookEvents, "is_active": {"true"}, "signature_scheme": {"pds"}}},
			"redeliver":        {hookPath + "/deliveries/" + m.delivery + "/redeliver", url.Values{}},
			"redeliver failed": {hookPath + "/redeliver-failed", url.Values{"since": {"2026-01-01T00:00:00Z"}}},
		} {
			post.form.Set("csrf", token)
			if p := b.post(post.path, post.form); p.status != http.StatusForbidden || !strings.Contains(p.body, "lacks the scope persons:read") {
				t.Errorf("%s: %d, want the API's 403 for persons:read", name, p.status)
			}
		}
		if p := b.get(hookPath + "/redeliver-failed?within=24h"); p.status != http.StatusForbidden {
			t.Errorf("counting the failed deliveries to redeliver: %d", p.status)
		}
		if page := b.get(hookPath + "/deliveries/" + m.delivery); strings.Contains(page.body, "/redeliver") {
			t.Error("the delivery page offers the redelivery")
		}
		hook, err := e.st.GetWebhook(context.Background(), m.account, m.hook)
		if err != nil || hook.TargetURL != legit.URL {
			t.Fatalf("after the refused posts the subscription targets %v (%v)", hook, err)
		}
		if hooks, total, _ := e.st.ListWebhooks(context.Background(), m.account, domain.PageRequest{Page: 1, Size: 10}); total != 1 {
			t.Fatalf("a refused subscribe made a subscription: %+v", hooks)
		}
		if len(attacker.Requests()) != 0 {
			t.Fatal("the key's receiver got a delivery")
		}
		// A rename sends nothing new anywhere.
		if p := b.post(hookPath, url.Values{"csrf": {token}, "name": {"renamed"}, "target_url": {legit.URL}, "events": domain.WebhookEvents,
			"is_active": {"true"}, "signature_scheme": {"pds"}}); p.status != http.StatusSeeOther {
			t.Errorf("a rename: %d %s", p.status, p.body)
		}
	})
}
