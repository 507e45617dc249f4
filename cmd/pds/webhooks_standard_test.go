package main

import (
	"bytes"
	"encoding/pem"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/internal/webhook"
	"github.com/pds-dev/pds/internal/webhook/webhooktest"
	"github.com/pds-dev/pds/pkg/webhookverify"
)

// officialCase is a delivery as a receiver got it, the secrets it holds,
// its clock, and whether the official libraries must accept it.
type officialCase struct {
	Name    string      `json:"name"`
	Headers http.Header `json:"headers"`
	Body    []byte      `json:"body"`
	Secrets []string    `json:"secrets"`
	Now     int64       `json:"now"`
	ok      bool
}

// TestOfficialLibrariesVerifyARunningServer: on each engine, a running pds
// serve delivers to a real HTTPS receiver for a subscription signed by
// Standard Webhooks, before and after a rotation; the official verifiers
// (npm standardwebhooks and svix's Webhook, pinned in .ci/standardwebhooks,
// and the Standard Webhooks project's Go library) accept what it sent, with
// the secret the API showed, and with either secret during the rotation's
// overlap; they refuse a tampered body, a wrong secret and a delivery
// received too late, as they document.
func TestOfficialLibrariesVerifyARunningServer(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rc := webhooktest.NewReceiver(t)
		rc.Respond(func(_ int, r *http.Request) int {
			if r.URL.Path == "/gone" {
				return http.StatusGone
			}
			return http.StatusNoContent
		})
		caFile := filepath.Join(t.TempDir(), "receiver.pem")
		if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rc.Server.Certificate().Raw}), 0o600); err != nil {
			t.Fatal(err)
		}
		var first, second, updated, disabled webhooktest.Request
		var old, current string
		const token = "Bearer s3cr3t-token-0123456789"
		serveOnce(t, eng.NewDatabase(t), func(base, key string) {
			call := apiCaller(t, base, key)
			// The standard subscription's deliveries (its target's path).
			mine := func() []webhooktest.Request {
				var out []webhooktest.Request
				for _, q := range rc.Requests() {
					if q.Path != "/gone" {
						out = append(out, q)
					}
				}
				return out
			}
			await := func(n int) webhooktest.Request {
				t.Helper()
				deadline := time.Now().Add(30 * time.Second)
				for len(mine()) < n {
					if time.Now().After(deadline) {
						t.Fatalf("delivery %d did not come within 30 s", n)
					}
					time.Sleep(20 * time.Millisecond)
				}
				return mine()[n-1]
			}
			// Its own headers and the changes member ride along (issue 67).
			hook := call("POST", "/webhooks", map[string]any{"name": "standard", "target_url": rc.URL,
				"events": []string{"person.created", "person.updated", "webhook.disabled"}, "signature_scheme": "standard-webhooks",
				"headers": map[string]string{"Authorization": token}, "include_changes": true}, 201)
			old = hook["secret"].(string)
			call("POST", "/persons", map[string]any{"email": "ada@x.test"}, 201)
			first = await(1)
			rotated := call("POST", "/webhooks/"+hook["id"].(string)+"/rotate-secret", nil, 200)
			current = rotated["secret"].(string)
			grace := call("POST", "/persons", map[string]any{"email": "grace@x.test"}, 201)
			second = await(2)
			call("PATCH", "/persons/"+grace["id"].(string), map[string]any{"email": "grace.hopper@x.test"}, 200)
			updated = await(3)
			// Another subscription retired by a 410: the standard one hears of it.
			call("POST", "/webhooks", map[string]any{"name": "doomed", "target_url": rc.Server.URL + "/gone",
				"events": []string{"person.created"}}, 201)
			call("POST", "/persons", map[string]any{"email": "linus@x.test"}, 201)
			for _, q := range []webhooktest.Request{await(4), await(5)} {
				if q.Header.Get(webhookverify.HeaderEvent) == "webhook.disabled" {
					disabled = q
				}
			}
		}, "--webhook-allow-private", "--webhook-ca-file", caFile, "--webhook-window", "100ms")
		if disabled.Body == nil {
			t.Fatal("no webhook.disabled delivery")
		}
		for _, q := range []webhooktest.Request{first, second, updated, disabled} {
			if q.Header.Get("Authorization") != token {
				t.Fatalf("a delivery came without the subscription's header: %v", q.Header)
			}
		}
		if !bytes.Contains(updated.Body, []byte(`"changes":["email"]`)) || !bytes.Contains(first.Body, []byte(`"changes":[]`)) {
			t.Fatalf("changes: created %s, updated %s", first.Body, updated.Body)
		}

		tampered := func(b []byte) []byte { return bytes.Replace(b, []byte("x.test"), []byte("y.test"), 1) }
		stranger := webhook.NewSecret()
		cases := []officialCase{
			{Name: "as sent, with the secret the API showed", Headers: first.Header, Body: first.Body, Secrets: []string{old}, ok: true},
			{Name: "the body tampered with", Headers: first.Header, Body: tampered(first.Body), Secrets: []string{old}},
			{Name: "another subscription's secret", Headers: first.Header, Body: first.Body, Secrets: []string{stranger}},
			{Name: "made before the rotation, the receiver holding only the new secret", Headers: first.Header, Body: first.Body, Secrets: []string{current}},
			{Name: "the rotation's overlap, the receiver holding the previous secret", Headers: second.Header, Body: second.Body, Secrets: []string{old}, ok: true},
			{Name: "the rotation's overlap, the receiver holding the new secret", Headers: second.Header, Body: second.Body, Secrets: []string{current}, ok: true},
			{Name: "the rotation's overlap, the body tampered with", Headers: second.Header, Body: tampered(second.Body), Secrets: []string{old, current}},
			{Name: "an update with the subscription's headers and changes", Headers: updated.Header, Body: updated.Body, Secrets: []string{current}, ok: true},
			{Name: "webhook.disabled", Headers: disabled.Header, Body: disabled.Body, Secrets: []string{current}, ok: true},
		}
		for i := range cases {
			cases[i].Now = signedAt(t, cases[i].Headers)
		}
		// A receiver's clock 6 minutes past the signing: a replay, as far
		// as it can tell (the npm libraries are given that clock; the Go
		// library reads the real one, so it does not take this case).
		late := officialCase{Name: "received 6 minutes after it was signed", Headers: first.Header, Body: first.Body,
			Secrets: []string{old}, Now: signedAt(t, first.Header) + 360}

		if n := len(strings.Fields(second.Header.Get(webhookverify.HeaderStandardSignature))); n != 2 {
			t.Fatalf("the delivery in the rotation's overlap carries %d signatures, want 2", n)
		}
		for _, c := range cases {
			err := webhookverify.Verify(c.Headers, c.Body, c.Secrets, time.Unix(c.Now, 0), webhookverify.Options{})
			if (err == nil) != c.ok {
				t.Errorf("%s: pkg/webhookverify says %v", c.Name, err)
			}
		}

		t.Run("go", func(t *testing.T) {
			for _, c := range cases {
				got := false
				for _, secret := range c.Secrets {
					wh, err := standardwebhooks.NewWebhook(secret)
					if err != nil {
						t.Fatalf("%s: %v", c.Name, err)
					}
					got = got || wh.Verify(c.Body, c.Headers) == nil
				}
				if got != c.ok {
					t.Errorf("%s: the Go library accepts: %v, want %v", c.Name, got, c.ok)
				}
			}
		})
		t.Run("npm", func(t *testing.T) {
			all := append(cases, late)
			verdicts := testenv.OfficialVerifiers(t, all)
			if len(verdicts) != len(all) {
				t.Fatalf("%d verdicts for %d cases", len(verdicts), len(all))
			}
			for i, v := range verdicts {
				for library, verdict := range map[string]string{"standardwebhooks": v.Standardwebhooks, "svix": v.Svix} {
					if v.Name != all[i].Name || (verdict == "ok") != all[i].ok {
						t.Errorf("%s: npm %s says %q", all[i].Name, library, verdict)
					}
				}
			}
		})
	})
}

func signedAt(t *testing.T, h http.Header) int64 {
	t.Helper()
	ts, err := strconv.ParseInt(h.Get(webhookverify.HeaderStandardTimestamp), 10, 64)
	if err != nil {
		t.Fatalf("webhook-timestamp: %v", err)
	}
	return ts
}
