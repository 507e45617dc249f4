package webhook_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/internal/webhook"
	"github.com/pds-dev/pds/internal/webhook/webhooktest"
	"github.com/pds-dev/pds/pkg/webhookverify"
)

func TestStandardSecrets(t *testing.T) {
	at := t0.Add(time.Hour)
	overlap := &domain.RetiredSecret{Secret: "whsec_b2xk", Until: at.Add(time.Minute)}
	ended := &domain.RetiredSecret{Secret: "whsec_b2xk", Until: at}
	for _, c := range []struct {
		name string
		job  domain.DeliveryJob
		want []string
	}{
		{"never rotated", domain.DeliveryJob{Secret: "whsec_bmV3", CurrentSecret: "whsec_bmV3"}, []string{"whsec_bmV3"}},
		{"in the overlap", domain.DeliveryJob{Secret: "whsec_bmV3", CurrentSecret: "whsec_bmV3", Previous: overlap},
			[]string{"whsec_bmV3", "whsec_b2xk"}},
		{"the overlap ended (at its end)", domain.DeliveryJob{Secret: "whsec_bmV3", CurrentSecret: "whsec_bmV3", Previous: ended},
			[]string{"whsec_bmV3"}},
		{"made before the rotation, in the overlap", domain.DeliveryJob{Secret: "whsec_b2xk", CurrentSecret: "whsec_bmV3", Previous: overlap},
			[]string{"whsec_bmV3", "whsec_b2xk"}},
		{"made before the rotation, after the overlap: its own secret still signs", domain.DeliveryJob{
			Secret: "whsec_b2xk", CurrentSecret: "whsec_bmV3", Previous: ended}, []string{"whsec_bmV3", "whsec_b2xk"}},
		{"made two rotations back", domain.DeliveryJob{Secret: "whsec_b2xk", CurrentSecret: "whsec_bmV3",
			Previous: &domain.RetiredSecret{Secret: "whsec_bWlk", Until: at.Add(time.Hour)}}, []string{"whsec_bmV3", "whsec_b2xk", "whsec_bWlk"}},
	} {
		if got := webhook.StandardSecrets(c.job, at); !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestStandardWebhooksScheme: a subscription signed by Standard Webhooks gets
// the spec's headers and that specification's, its webhook-id the delivery
// id on every attempt; after a rotation both secrets sign every delivery
// until the overlap ends, then the new one alone. A pds subscription gets no
// webhook-* header.
func TestStandardWebhooksScheme(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rc := webhooktest.NewReceiver(t)
		rc.FirstThen(http.StatusServiceUnavailable, http.StatusOK)
		s := webhooktest.Settings(rc)
		r := start(t, eng, s)
		sub := r.subscribe(r.acc, rc.URL, "person.created")
		scheme := domain.SchemeStandardWebhooks
		if _, err := r.st.UpdateWebhook(context.Background(), r.acc, sub.ID, domain.WebhookUpdate{SignatureScheme: &scheme}, r.clock.Now()); err != nil {
			t.Fatal(err)
		}
		verifies := func(req webhooktest.Request, secret string) error {
			return webhookverify.VerifyStandard(req.Header, req.Body, []string{secret}, r.clock.Now(), webhookverify.Options{})
		}
		signatures := func(req webhooktest.Request) int {
			return len(strings.Fields(req.Header.Get(webhookverify.HeaderStandardSignature)))
		}

		r.touch(r.acc, "first")
		r.advance(window)      // a 503
		r.advance(time.Minute) // its retry
		reqs := wantRequests(t, rc, 2)
		for i, req := range reqs {
			id := req.Header.Get(webhookverify.HeaderDeliveryID)
			if got := req.Header.Get(webhookverify.HeaderStandardID); got != id || got != decode(t, req).ID {
				t.Fatalf("attempt %d: webhook-id %q, delivery id %q", i+1, got, id)
			}
			if got, want := req.Header.Get(webhookverify.HeaderStandardTimestamp), req.Header.Get(webhookverify.HeaderTimestamp); got != want {
				t.Fatalf("attempt %d: webhook-timestamp %q, Service-Timestamp %q", i+1, got, want)
			}
			if err := verifies(req, sub.Secret); err != nil || signatures(req) != 1 {
				t.Fatalf("attempt %d: %v (%d signatures)", i+1, err, signatures(req))
			}
			// The spec's signature goes along.
			if err := webhookverify.VerifySignature(req.Header.Get(webhookverify.HeaderSignature), req.Body, []string{sub.Secret},
				r.clock.Now(), webhookverify.Options{}); err != nil {
				t.Fatalf("attempt %d: Service-Signature: %v", i+1, err)
			}
		}

		rotated, rounds, err := r.st.RotateWebhookSecret(context.Background(), r.acc, sub.ID, webhook.NewSecret(), r.clock.Now(),
			s.OverlapUntil(r.clock.Now()))
		if err != nil {
			t.Fatal(err)
		}
		if until := s.PreviousSecretExpiry(rotated, rounds, r.clock.Now()); !until.Equal(r.clock.Now().Add(webhook.DefaultRotationOverlap)) {
			t.Fatalf("the previous secret expires at %v; want the end of a day's overlap", until)
		}
		r.touch(r.acc, "in the overlap")
		r.advance(window)
		req := wantRequests(t, rc, 3)[2]
		if signatures(req) != 2 || verifies(req, sub.Secret) != nil || verifies(req, rotated.Secret) != nil {
			t.Fatalf("in the overlap: %q; old %v, new %v", req.Header.Get(webhookverify.HeaderStandardSignature),
				verifies(req, sub.Secret), verifies(req, rotated.Secret))
		}
		// The log keeps both signatures' scheme, never a value a reader
		// could send the receiver again.
		_, attempts, err := r.st.GetDelivery(context.Background(), r.acc, sub.ID, req.Header.Get(webhookverify.HeaderDeliveryID))
		if err != nil || len(attempts) != 1 {
			t.Fatalf("the delivery in the overlap: %+v, %v", attempts, err)
		}
		wantSentHeaders(t, attempts[0].RequestHeaders, req.Header, sub.Secret)
		if got := attempts[0].RequestHeaders["Webhook-Signature"]; got != "v1,…redacted v1,…redacted" {
			t.Fatalf("the log keeps webhook-signature %q", got)
		}

		r.clock.Advance(webhook.DefaultRotationOverlap)
		r.touch(r.acc, "after the overlap")
		r.advance(window)
		req = wantRequests(t, rc, 4)[3]
		if err := verifies(req, sub.Secret); signatures(req) != 1 || !errors.Is(err, webhookverify.ErrNoMatch) || verifies(req, rotated.Secret) != nil {
			t.Fatalf("after the overlap: %q; old %v", req.Header.Get(webhookverify.HeaderStandardSignature), err)
		}

		pds := domain.SchemePDS
		if _, err := r.st.UpdateWebhook(context.Background(), r.acc, sub.ID, domain.WebhookUpdate{SignatureScheme: &pds}, r.clock.Now()); err != nil {
			t.Fatal(err)
		}
		r.touch(r.acc, "back to pds")
		r.advance(window)
		req = wantRequests(t, rc, 5)[4]
		if webhookverify.IsStandard(req.Header) {
			t.Fatalf("a pds delivery carries webhook-* headers: %v", req.Header)
		}
		if err := webhookverify.Verify(req.Header, req.Body, []string{rotated.Secret}, r.clock.Now(), webhookverify.Options{}); err != nil {
			t.Fatal(err)
		}
	})
}
