package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/internal/webhook"
	"github.com/pds-dev/pds/internal/webhook/webhooktest"
	"github.com/pds-dev/pds/pkg/webhookverify"
)

// TestSignatureScheme: signature_scheme is chosen on create (pds when left
// out), changed on update, shown in every representation, refused when
// unknown or null; a standard-webhooks subscription's deliveries verify with
// the Standard Webhooks headers, and its rotation keeps the previous secret
// signing for the overlap.
func TestSignatureScheme(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		rc := webhooktest.NewReceiver(t)
		rc.Always(http.StatusOK)
		env := newWebhookEnv(t, eng, webhooktest.Settings(rc))
		key := env.Key(env.NewAccount())

		plain := createWebhook(env.Env, key, rc.URL, "person.created")
		if plain.Scheme != "pds" {
			t.Fatalf("default scheme %q", plain.Scheme)
		}
		var standard webhookView
		env.Post(key, "/webhooks", map[string]any{"name": "std", "target_url": rc.URL, "events": []string{"person.created"},
			"signature_scheme": "standard-webhooks"}).Want(201).JSON(&standard)
		if standard.Scheme != "standard-webhooks" {
			t.Fatalf("created %+v", standard)
		}
		for _, body := range []map[string]any{
			{"name": "x", "target_url": rc.URL, "events": []string{"person.created"}, "signature_scheme": "svix"},
			{"name": "x", "target_url": rc.URL, "events": []string{"person.created"}, "signature_scheme": 1},
		} {
			wantInvalid(t, env.Post(key, "/webhooks", body).Want(400).Problem(), "/signature_scheme")
		}
		wantInvalid(t, env.Patch(key, "/webhooks/"+plain.ID, map[string]any{"signature_scheme": nil}).Want(400).Problem(), "/signature_scheme")
		wantInvalid(t, env.Patch(key, "/webhooks/"+plain.ID, map[string]any{"signature_scheme": "Standard-Webhooks"}).Want(400).Problem(), "/signature_scheme")
		if p := listOf[webhookView](env.Env, key, "/webhooks"); p.Total != 2 || p.Items[0].Scheme != "pds" || p.Items[1].Scheme != "standard-webhooks" {
			t.Fatalf("list %+v", p)
		}

		var patched webhookView
		env.Patch(key, "/webhooks/"+plain.ID, map[string]any{"signature_scheme": "standard-webhooks"}).Want(200).JSON(&patched)
		if patched.Scheme != "standard-webhooks" {
			t.Fatalf("patched %+v", patched)
		}
		env.Patch(key, "/webhooks/"+plain.ID, map[string]any{"name": "renamed"}).Want(200).JSON(&patched)
		if patched.Scheme != "standard-webhooks" {
			t.Fatalf("a patch without the scheme changed it: %+v", patched)
		}
		env.Delete(key, "/webhooks/"+plain.ID).Want(204)

		env.touch(key, "p1")
		env.Clock.Advance(env.window)
		env.run()
		reqs := rc.Requests()
		if len(reqs) != 1 {
			t.Fatalf("%d deliveries", len(reqs))
		}
		if err := webhookverify.VerifyStandard(reqs[0].Header, reqs[0].Body, []string{standard.Secret}, env.Clock.Now(), webhookverify.Options{}); err != nil {
			t.Fatalf("the delivery does not verify as Standard Webhooks: %v", err)
		}

		var rotated webhookView
		env.Post(key, "/webhooks/"+standard.ID+"/rotate-secret", nil).Want(200).JSON(&rotated)
		if want := env.Clock.Now().Add(webhook.DefaultRotationOverlap).Format("2006-01-02T15:04:05.000Z"); rotated.PreviousSecretExpiresAt != want || rotated.Scheme != "standard-webhooks" {
			t.Fatalf("rotated %+v; previous secret should sign until %s", rotated, want)
		}
		env.Clock.Advance(time.Hour)
		env.touch(key, "p2")
		env.Clock.Advance(env.window)
		env.run()
		if reqs = rc.Requests(); len(reqs) != 2 {
			t.Fatalf("%d deliveries", len(reqs))
		}
		for _, secret := range []string{standard.Secret, rotated.Secret} {
			if err := webhookverify.VerifyStandard(reqs[1].Header, reqs[1].Body, []string{secret}, env.Clock.Now(), webhookverify.Options{}); err != nil {
				t.Fatalf("in the overlap, a receiver holding one secret refuses: %v", err)
			}
		}
	})
}
