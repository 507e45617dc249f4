package console_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/internal/webhook"
	"github.com/pds-dev/pds/internal/webhook/webhooktest"
	"github.com/pds-dev/pds/pkg/webhookverify"
)

// TestSubscriptionScreensShowHeadersMaskedAndDeliveriesTheirChanges: the
// console creates a subscription with headers, a rate and changes as the
// API does; its screens show the headers' names with masked values, never
// a value; an edit with the field left empty keeps them; a reserved name
// is refused; a delivery's page lists the members its burst changed.
func TestSubscriptionScreensShowHeadersMaskedAndDeliveriesTheirChanges(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rc := webhooktest.NewReceiver(t)
		e := newEnvWith(t, eng, webhooktest.Settings(rc))
		acc := e.account()
		full, _ := e.key(acc)
		b := e.browser()
		b.signIn(full)
		const token = "Bearer very-secret-value-0123WXYZ"
		form := url.Values{"csrf": {b.csrf("/console/webhooks")}, "name": {"gateway"}, "target_url": {rc.URL},
			"events": {"person.created", "person.updated"}, "signature_scheme": {"pds"},
			"headers": {"Authorization: " + token + "\nX-Route: eu"}, "max_per_second": {"50"}, "include_changes": {"true"}}
		if p := b.post("/console/webhooks", form); p.status != http.StatusCreated {
			t.Fatalf("create: %d %s", p.status, p.body)
		}
		hooks, _, err := e.st.ListWebhooks(context.Background(), acc, domain.PageRequest{Page: 1, Size: 10})
		if err != nil || len(hooks) != 1 || hooks[0].Headers["Authorization"] != token || hooks[0].MaxPerSecond != 50 || !hooks[0].IncludeChanges {
			t.Fatalf("stored %+v, %v", hooks, err)
		}
		hook := hooks[0]
		for _, path := range []string{"/console/webhooks", "/console/webhooks/" + hook.ID} {
			body := b.get(path).body
			if strings.Contains(body, "very-secret") || !strings.Contains(body, "Authorization: ...WXYZ") || !strings.Contains(body, "X-Route: ...") ||
				!strings.Contains(body, "at most 50 attempts a second") {
				t.Fatalf("%s shows the headers as %q", path, body)
			}
		}

		edit := url.Values{"csrf": {b.csrf("/console/webhooks/" + hook.ID)}, "name": {"gateway"}, "target_url": {rc.URL},
			"events": {"person.created", "person.updated"}, "signature_scheme": {"pds"}, "is_active": {"true"},
			"headers": {""}, "max_per_second": {"0"}, "include_changes": {"true"}}
		if p := b.post("/console/webhooks/"+hook.ID, edit); p.status != http.StatusSeeOther {
			t.Fatalf("edit: %d %s", p.status, p.body)
		}
		if got, _ := e.st.GetWebhook(context.Background(), acc, hook.ID); len(got.Headers) != 2 || got.MaxPerSecond != 0 {
			t.Fatalf("after an edit leaving headers empty: %+v", got)
		}
		edit.Set("headers", "Service-Signature: forged")
		if p := b.post("/console/webhooks/"+hook.ID, edit); p.status != http.StatusBadRequest || !strings.Contains(p.body, "Service-Signature") {
			t.Fatalf("a reserved header: %d", p.status)
		}

		ctx := context.Background()
		write := store.Write{Now: e.clock.Now(), Window: time.Minute}
		p, _, err := e.st.UpsertPerson(ctx, acc, domain.PersonUpsert{Email: domain.Opt[string]{Set: true, Value: "ada@example.org"}}, write)
		if err != nil {
			t.Fatal(err)
		}
		worker, err := webhook.NewWorker(e.st, webhook.PersonRenderer{Persons: e.st, PublicURL: "https://pds.test"}, e.clock,
			e.hooks, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(2 * time.Minute)
		if err := worker.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.st.UpsertPerson(ctx, acc, domain.PersonUpsert{Email: domain.Opt[string]{Set: true, Value: "ada@example.org"},
			FirstName: domain.Opt[string]{Set: true, Value: "Ada"}}, store.Write{Now: e.clock.Now(), Window: time.Minute}); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(2 * time.Minute)
		if err := worker.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		reqs := rc.Requests()
		if len(reqs) != 2 || reqs[1].Header.Get("Authorization") != token {
			t.Fatalf("%d deliveries", len(reqs))
		}
		page := b.get("/console/webhooks/" + hook.ID + "/deliveries/" + reqs[1].Header.Get(webhookverify.HeaderDeliveryID)).body
		if !strings.Contains(page, "<dt>Changes</dt><dd>first_name</dd>") || strings.Contains(page, "very-secret") {
			t.Fatalf("the delivery's page of %s: %s", p.ID, page)
		}
	})
}
