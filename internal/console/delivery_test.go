package console_test

import (
	"context"
	"log/slog"
	"net/http"
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

// delivered is a delivery a real receiver got: its subscription, and the
// request as the receiver saw it.
type delivered struct {
	hook domain.Webhook
	id   string
	got  webhooktest.Request
}

// deliverOne subscribes rc to the account's person events, signed by
// Standard Webhooks as well as the spec's headers, changes person and runs
// the worker until the receiver got the delivery.
func deliverOne(t *testing.T, e *env, rc *webhooktest.Receiver, acc string, person domain.PersonUpsert) delivered {
	t.Helper()
	ctx := context.Background()
	now := e.clock.Now()
	hook := domain.Webhook{ID: domain.NewID("wh"), AccountID: acc, Name: "CRM sync", TargetURL: rc.URL,
		Events: domain.WebhookEvents, IsActive: true, Secret: webhook.NewSecret(), SecretVersion: 1,
		SignatureScheme: domain.SchemeStandardWebhooks, CreatedAt: now, UpdatedAt: now}
	if err := e.st.CreateWebhook(ctx, hook); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.st.UpsertPerson(ctx, acc, person, store.Write{Now: now, Window: time.Minute}); err != nil {
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
	return delivered{hook: hook, id: reqs[0].Header.Get(webhookverify.HeaderDeliveryID), got: reqs[0]}
}

// TestDeliveryPageShowsNoSignatureToReplay: the attempt's headers on a
// delivery's page keep each signature's time and scheme, never the value
// the receiver got, which a reader could send it again within its
// timestamp tolerance.
func TestDeliveryPageShowsNoSignatureToReplay(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rc := webhooktest.NewReceiver(t)
		e := newEnvWith(t, eng, webhooktest.Settings(rc))
		acc := e.account()
		d := deliverOne(t, e, rc, acc, domain.PersonUpsert{Email: domain.Opt[string]{Set: true, Value: "ada@example.org"}})
		reader, _ := e.key(acc, domain.ScopeWebhooksRead)
		b := e.browser()
		b.signIn(reader)
		page := b.get("/console/webhooks/" + d.hook.ID + "/deliveries/" + d.id)
		if page.status != http.StatusOK {
			t.Fatalf("the delivery's page: %d", page.status)
		}
		service := d.got.Header.Get(webhookverify.HeaderSignature)
		standard := d.got.Header.Get(webhookverify.HeaderStandardSignature)
		_, serviceValue, _ := strings.Cut(service, ",v1=")
		_, standardValue, _ := strings.Cut(standard, "v1,")
		if serviceValue == "" || standardValue == "" {
			t.Fatalf("the receiver got Service-Signature %q, webhook-signature %q", service, standard)
		}
		for _, sig := range []string{serviceValue, standardValue} {
			if strings.Contains(page.body, sig) || strings.Contains(page.body, strings.ReplaceAll(sig, "+", "&#43;")) {
				t.Errorf("the page shows the signature %q the receiver got", sig)
			}
		}
		stamp := d.got.Header.Get(webhookverify.HeaderTimestamp)
		for _, want := range []string{"t=" + stamp + ",v1=…redacted", "v1,…redacted"} {
			if !strings.Contains(page.body, want) {
				t.Errorf("the page does not show %q", want)
			}
		}
	})
}
