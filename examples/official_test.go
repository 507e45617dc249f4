package examples

import (
	"bytes"
	"net/http"
	"strconv"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/pkg/webhookverify"
)

// crossCase is a Standard Webhooks delivery signed by SignStandard, the
// verdict of pkg/webhookverify (a kind, as kindOf names it) and that of the
// official libraries: "ok" or "fail".
type crossCase struct {
	vector
	ours, theirs string
}

// crossCases are signed at now, a real clock: the Go library of the
// Standard Webhooks project reads time.Now and cannot be given another.
func crossCases(t *testing.T, now time.Time) []crossCase {
	body := []byte(`{"id":"5f0c2a3e9b8d4c1fa7e6d5c4b3a29180","event":"person.updated","created":"2026-11-21T10:15:30.123Z","data":{"name":"José Müller","tags":["🦊"]}}`)
	sh := func(b []byte, at time.Time, secrets ...string) http.Header {
		return standardDelivered(t, deliveryID, b, secrets, at)
	}
	ts := strconv.FormatInt(now.Unix(), 10)
	zeros := "whsec_AAAAAAAA" // six zero bytes: as an HMAC key, the empty key
	cases := []crossCase{
		{vector{Name: "valid, both header sets as pds sends them", Headers: sh(body, now, current)}, "ok", "ok"},
		{vector{Name: "valid, the Standard headers alone", Headers: standardOnly(sh(body, now, current))}, "ok", "ok"},
		{vector{Name: "valid, an empty body", Headers: sh(nil, now, current), Body: []byte{}}, "ok", "ok"},
		{vector{Name: "valid, signed 4 minutes ago", Headers: sh(body, now.Add(-4*time.Minute), current)}, "ok", "ok"},
		{vector{Name: "a rotation's overlap, the receiver knows the new secret", Headers: sh(body, now, current, previous)}, "ok", "ok"},
		{vector{Name: "a rotation's overlap, the receiver knows only the old secret", Headers: sh(body, now, current, previous), Secrets: []string{previous}}, "ok", "ok"},
		{vector{Name: "a rotation's overlap, the receiver knows both", Headers: sh(body, now, current, previous), Secrets: []string{previous, current}}, "ok", "ok"},
		{vector{Name: "the body tampered with", Headers: sh(body, now, current), Body: bytes.Replace(body, []byte("updated"), []byte("created"), 1)}, "no_match", "fail"},
		{vector{Name: "the wrong secret", Headers: sh(body, now, current), Secrets: []string{someoneElse}}, "no_match", "fail"},
		{vector{Name: "the rotation over, the receiver knows only the old secret", Headers: sh(body, now, current), Secrets: []string{previous}}, "no_match", "fail"},
		{vector{Name: "webhook-id changed", Headers: with(sh(body, now, current), webhookverify.HeaderStandardID, "5f0c2a3e9b8d4c1fa7e6d5c4b3a29181")}, "no_match", "fail"},
		{vector{Name: "keyed with the whole whsec_ string", Headers: with(sh(body, now, current), webhookverify.HeaderStandardSignature, rawStandardSignature([]byte(current), deliveryID, ts, body))}, "no_match", "fail"},
		{vector{Name: "signed 10 minutes ago", Headers: sh(body, now.Add(-10*time.Minute), current)}, "timestamp", "fail"},
		{vector{Name: "signed 10 minutes ahead", Headers: sh(body, now.Add(10*time.Minute), current)}, "timestamp", "fail"},
		{vector{Name: "webhook-signature missing", Headers: with(sh(body, now, current), webhookverify.HeaderStandardSignature)}, "missing_header", "fail"},
		// Where pds is stricter: the libraries take a secret of zero bytes,
		// the empty key, under which anyone can sign.
		{vector{Name: "a secret of zero bytes, the delivery signed with the empty key", Headers: with(sh(body, now, current), webhookverify.HeaderStandardSignature, rawStandardSignature(nil, deliveryID, ts, body)), Secrets: []string{zeros}}, "no_secret", "ok"},
	}
	for i := range cases {
		v := &cases[i].vector
		if v.Body == nil {
			v.Body = body
		}
		if v.Secrets == nil {
			v.Secrets = []string{current}
		}
		v.Now = now.Unix()
		v.Want = cases[i].ours
	}
	return cases
}

// TestOfficialLibrariesVerifyStandardDeliveries has the official Standard
// Webhooks verifiers decide deliveries signed by webhookverify.SignStandard,
// and checks that they decide as webhookverify.Verify does: accepted or
// refused (they do not say why in the same words), except where pds is
// stricter on purpose, said so in the case.
func TestOfficialLibrariesVerifyStandardDeliveries(t *testing.T) {
	now := time.Now()
	cases := crossCases(t, now)
	for _, c := range cases {
		err := webhookverify.Verify(c.Headers, c.Body, c.Secrets, now, webhookverify.Options{})
		if got := kindOf(err); got != c.ours {
			t.Errorf("%s: pkg/webhookverify decides %s, want %s", c.Name, got, c.ours)
		}
	}

	t.Run("go", func(t *testing.T) {
		// github.com/standard-webhooks/standard-webhooks/libraries/go, pinned in go.mod.
		for _, c := range cases {
			got := "fail"
			for _, secret := range c.Secrets {
				wh, err := standardwebhooks.NewWebhook(secret)
				if err == nil && wh.Verify(c.Body, c.Headers) == nil {
					got = "ok"
				}
			}
			if got != c.theirs {
				t.Errorf("%s: the Go library decides %s, want %s", c.Name, got, c.theirs)
			}
		}
	})

	t.Run("npm", func(t *testing.T) {
		vectors := make([]vector, len(cases))
		for i, c := range cases {
			vectors[i] = c.vector
		}
		results := testenv.OfficialVerifiers(t, vectors)
		if len(results) != len(cases) {
			t.Fatalf("%d results for %d cases", len(results), len(cases))
		}
		for i, r := range results {
			for library, verdict := range map[string]string{"standardwebhooks": r.Standardwebhooks, "svix": r.Svix} {
				got := "fail"
				if verdict == "ok" {
					got = "ok"
				}
				if r.Name != cases[i].Name || got != cases[i].theirs {
					t.Errorf("%s: npm %s decides %q, want %s", cases[i].Name, library, verdict, cases[i].theirs)
				}
			}
			t.Logf("%s: standardwebhooks %s; svix %s; pkg/webhookverify %s", r.Name, r.Standardwebhooks, r.Svix, cases[i].ours)
		}
	})
}
