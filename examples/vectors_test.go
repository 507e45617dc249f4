// Package examples holds receiver snippets in other languages than Go
// (verify-node, verify-python) and this test, which makes them decide, like
// pkg/webhookverify, on deliveries signed by the code the server signs with.
package examples

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/webhook"
	"github.com/pds-dev/pds/pkg/webhookverify"
)

// vector is one delivery as a receiver gets it and what every verifier must
// decide: "ok" or the kind of error (see kindOf).
type vector struct {
	Name      string      `json:"name"`
	Headers   http.Header `json:"headers"`
	Body      []byte      `json:"body"` // base64 in JSON: a body need not be UTF-8
	Secrets   []string    `json:"secrets"`
	Tolerance int64       `json:"tolerance"` // seconds; 0 or less is the default, 300
	Now       int64       `json:"now"`       // the receiver's clock, unix seconds
	Want      string      `json:"want"`
}

// kindOf names the Go verifier's decision as the snippets name theirs.
func kindOf(err error) string {
	for _, k := range []struct {
		err  error
		kind string
	}{
		{webhookverify.ErrNoSecret, "no_secret"},
		{webhookverify.ErrMissingHeader, "missing_header"},
		{webhookverify.ErrMalformedHeader, "malformed_header"},
		{webhookverify.ErrTimestampHeaders, "timestamp_headers"},
		{webhookverify.ErrTimestamp, "timestamp"},
		{webhookverify.ErrNoMatch, "no_match"},
	} {
		if errors.Is(err, k.err) {
			return k.kind
		}
	}
	if err == nil {
		return "ok"
	}
	return "unknown error: " + err.Error()
}

// The fixed clock and secrets, shaped like webhook.NewSecret's, so that a
// vector reads the same at every run.
var (
	signedAt = time.Unix(1795258530, 0)
	current  = "whsec_Y3VycmVudC1zZWNyZXQtY3VycmVudC1zZWNyZXQtY3VycmVu"
	previous = "whsec_cHJldmlvdXMtc2VjcmV0LXByZXZpb3VzLXNlY3JldC1wcmV2"
)

// delivered is the headers pds puts on an attempt of body signed with secret
// at at, by the very function its worker calls.
func delivered(t *testing.T, body []byte, secret string, at time.Time) http.Header {
	t.Helper()
	h := http.Header{}
	webhook.SetHeaders(h, domain.Delivery{
		ID: "5f0c2a3e9b8d4c1fa7e6d5c4b3a29180", WebhookID: "wh_0123456789abcdef", Event: "person.updated", Body: body,
	}, secret, at)
	return h
}

// with returns a copy of h where name has exactly the given values (none
// removes it).
func with(h http.Header, name string, values ...string) http.Header {
	h = h.Clone()
	h.Del(name)
	for _, v := range values {
		h.Add(name, v)
	}
	return h
}

func vectors(t *testing.T) []vector {
	body, err := webhook.Body("5f0c2a3e9b8d4c1fa7e6d5c4b3a29180", "person.updated", signedAt.Add(-5*time.Minute),
		json.RawMessage(`{"name":"José Müller","tags":["🦊"]}`))
	if err != nil {
		t.Fatal(err)
	}
	h := delivered(t, body, current, signedAt)
	sig := h.Get(webhookverify.HeaderSignature)
	mac := strings.TrimPrefix(sig, "t=1795258530,v1=")
	if sig == mac {
		t.Fatalf("the signer's header %q is not t=1795258530,v1=...", sig)
	}
	signatureOnly := func(sig string) http.Header { return http.Header{webhookverify.HeaderSignature: {sig}} }
	replaced := func(sig string) http.Header { return with(h, webhookverify.HeaderSignature, sig) }
	pad := func(sig string, size int) string { // sig and an unknown element, size bytes in all
		return sig + ",x=" + strings.Repeat("y", size-len(sig)-len(",x="))
	}
	reindented := &bytes.Buffer{}
	if err := json.Indent(reindented, body, "", "  "); err != nil {
		t.Fatal(err)
	}
	notUTF8 := []byte{0xff, 0xfe, '{', 0x80, '}'}
	signedNotUTF8 := signatureOnly(webhookverify.Sign(current, signedAt, notUTF8))
	unicodeSecret := "whsec_clé-ünïcode-🔑"
	now := signedAt.Unix()
	currentOnly := []string{current}

	// A field a vector leaves unset is the common case: body, the current
	// secret alone, the default tolerance (0: 300 s) and a receiver clock at
	// the signing time.
	vs := []vector{
		// Authentic deliveries.
		{Name: "valid: the headers pds sends", Headers: h, Want: "ok"},
		{Name: "valid: signed with the second of two secrets (a rotation)", Headers: delivered(t, body, previous, signedAt), Secrets: []string{current, previous}, Want: "ok"},
		{Name: "valid: signed with the first of two secrets", Headers: h, Secrets: []string{current, previous}, Want: "ok"},
		{Name: "valid: 300 s late, the default tolerance's edge", Headers: h, Now: now + 300, Want: "ok"},
		{Name: "valid: 300 s early, the default tolerance's edge", Headers: h, Now: now - 300, Want: "ok"},
		{Name: "valid: 3600 s late under a tolerance of 3600 s", Headers: h, Tolerance: 3600, Now: now + 3600, Want: "ok"},
		{Name: "valid: 60 s early under a tolerance of 60 s", Headers: h, Tolerance: 60, Now: now - 60, Want: "ok"},
		{Name: "valid: without Service-Timestamp", Headers: with(h, webhookverify.HeaderTimestamp), Want: "ok"},
		{Name: "valid: a second Service-Signature header is not read", Headers: with(h, webhookverify.HeaderSignature, sig, "garbage"), Want: "ok"},
		{Name: "valid: several v1, the matching one last", Headers: replaced("t=1795258530,v1=" + strings.Repeat("00", 32) + ",v1=" + mac), Want: "ok"},
		{Name: "valid: elements of other schemes are skipped", Headers: replaced("v0=abc,t=1795258530,v2=x=y,v1=" + mac), Want: "ok"},
		{Name: "valid: spaces and tabs around elements", Headers: replaced(" t=1795258530 ,\tv1=" + mac + "\t "), Want: "ok"},
		{Name: "valid: non-ASCII white space Go trims (NBSP, ideographic space)", Headers: replaced("\u00a0t=1795258530\u3000,v1=" + mac + "\u2003"), Want: "ok"},
		{Name: "valid: upper-case hex", Headers: replaced("t=1795258530,v1=" + strings.ToUpper(mac)), Want: "ok"},
		{Name: "valid: t with a plus sign and leading zeros (its canonical form is signed)", Headers: replaced("t=+001795258530,v1=" + mac), Want: "ok"},
		{Name: "valid: a header of exactly 4096 bytes", Headers: replaced(pad(sig, 4096)), Want: "ok"},
		{Name: "valid: an empty body", Headers: signatureOnly(webhookverify.Sign(current, signedAt, nil)), Body: []byte{}, Want: "ok"},
		{Name: "valid: a body that is not UTF-8", Headers: signedNotUTF8, Body: notUTF8, Want: "ok"},
		{Name: "valid: a non-ASCII secret is keyed by its UTF-8 bytes", Headers: delivered(t, body, unicodeSecret, signedAt), Secrets: []string{unicodeSecret}, Want: "ok"},

		// No signature matches.
		{Name: "no match: the body tampered with", Headers: h, Body: bytes.Replace(body, []byte("updated"), []byte("created"), 1), Want: "no_match"},
		{Name: "no match: a newline added to the body", Headers: h, Body: append(append([]byte{}, body...), '\n'), Want: "no_match"},
		{Name: "no match: the body re-serialized by a JSON parser", Headers: h, Body: reindented.Bytes(), Want: "no_match"},
		{Name: "no match: a byte of a non-UTF-8 body changed", Headers: signedNotUTF8, Body: []byte{0xff, 0xfe, '{', 0x81, '}'}, Want: "no_match"},
		{Name: "no match: the wrong secret", Headers: h, Secrets: []string{previous}, Want: "no_match"},
		{Name: "no match: two wrong secrets", Headers: h, Secrets: []string{previous, "whsec_someone-else"}, Want: "no_match"},
		{Name: "no match: the secret without its whsec_ prefix", Headers: h, Secrets: []string{strings.TrimPrefix(current, "whsec_")}, Want: "no_match"},
		{Name: "no match: t moved, v1 kept (t is signed)", Headers: signatureOnly("t=1795258531,v1=" + mac), Want: "no_match"},
		{Name: "no match: the signature of another body", Headers: delivered(t, []byte(`{}`), current, signedAt), Want: "no_match"},

		// Outside the tolerance.
		{Name: "timestamp: 301 s late (expired)", Headers: h, Now: now + 301, Want: "timestamp"},
		{Name: "timestamp: 301 s early (signed in the future)", Headers: h, Now: now - 301, Want: "timestamp"},
		{Name: "timestamp: 3601 s late under a tolerance of 3600 s", Headers: h, Tolerance: 3600, Now: now + 3601, Want: "timestamp"},
		{Name: "timestamp: 61 s early under a tolerance of 60 s", Headers: h, Tolerance: 60, Now: now - 61, Want: "timestamp"},
		{Name: "timestamp: 301 s late under a negative tolerance (the default)", Headers: h, Tolerance: -5, Now: now + 301, Want: "timestamp"},
		{Name: "timestamp: an hour late", Headers: h, Now: now + 3600, Want: "timestamp"},
		{Name: "timestamp: t=-0 is 0, not malformed", Headers: signatureOnly("t=-0,v1=" + mac), Want: "timestamp"},
		{Name: "timestamp: the largest int64 t, compared without overflow", Headers: signatureOnly("t=9223372036854775807,v1=" + mac), Want: "timestamp"},

		// Service-Timestamp is not t.
		{Name: "timestamp headers: Service-Timestamp one second off", Headers: with(h, webhookverify.HeaderTimestamp, "1795258531"), Want: "timestamp_headers"},
		{Name: "timestamp headers: Service-Timestamp not in canonical form", Headers: with(h, webhookverify.HeaderTimestamp, "01795258530"), Want: "timestamp_headers"},

		// No signature to check.
		{Name: "missing: no Service-Signature", Headers: with(h, webhookverify.HeaderSignature), Want: "missing_header"},
		{Name: "missing: an empty Service-Signature", Headers: replaced(""), Want: "missing_header"},
		{Name: "missing: no headers at all", Headers: http.Header{}, Want: "missing_header"},

		// No key material: refused whatever the delivery.
		{Name: "no secret: an empty list", Headers: h, Secrets: []string{}, Want: "no_secret"},
		{Name: "no secret: an empty secret beside a valid one", Headers: h, Secrets: []string{current, ""}, Want: "no_secret"},
		{Name: "no secret: the prefix alone", Headers: delivered(t, body, "whsec_", signedAt), Secrets: []string{"whsec_"}, Want: "no_secret"},
		{Name: "no secret: the prefix and an ideographic space", Headers: h, Secrets: []string{"whsec_\u3000"}, Want: "no_secret"},
		{Name: "no secret: white space", Headers: h, Secrets: []string{" \t"}, Want: "no_secret"},
		{Name: "no secret: refused before the headers are read", Headers: http.Header{}, Secrets: []string{}, Want: "no_secret"},
	}

	// Malformed signature headers, beside the rest of what pds sends.
	for _, bad := range []struct{ name, sig string }{
		{"garbage", "garbage"},
		{"t alone", "t=1795258530"},
		{"v1 alone", "v1=" + mac},
		{"an empty t", "t=,v1=" + mac},
		{"t not a number", "t=abc,v1=" + mac},
		{"a negative t", "t=-5,v1=" + mac},
		{"t in hex", "t=0x6b00e1a2,v1=" + mac},
		{"t with underscores (Python's int takes them)", "t=1_795_258_530,v1=" + mac},
		{"t in Arabic-Indic digits (Python's int takes them)", "t=١٧٩٥٢٥٨٥٣٠,v1=" + mac},
		{"t with a fraction", "t=1795258530.0,v1=" + mac},
		{"t of 2^63, beyond int64", "t=9223372036854775808,v1=" + mac},
		{"t of 23 digits", "t=99999999999999999999999,v1=" + mac},
		{"two t", "t=1795258530,t=1795258530,v1=" + mac},
		{"a space before =", "t =1795258530,v1=" + mac},
		{"a space after =", "t=1795258530,v1= " + mac},
		{"v1 of 63 hex digits", "t=1795258530,v1=" + mac[:63]},
		{"v1 of 66 hex digits", "t=1795258530,v1=" + mac + "00"},
		{"v1 not hex", "t=1795258530,v1=zz" + mac[2:]},
		{"v1 with a space inside (bytes.fromhex takes it)", "t=1795258530,v1=" + mac[:32] + " " + mac[32:]},
		{"v1 then a BOM, which Go does not trim (JavaScript's trim does)", "t=1795258530,v1=" + mac + "\ufeff"},
		{"v1 then U+001C, which Go does not trim (Python's strip does)", "t=1795258530,v1=" + mac + "\x1c"},
		{"v1 then =", "t=1795258530,v1=" + mac + "="},
		{"an empty element", "t=1795258530,,v1=" + mac},
		{"a trailing comma", "t=1795258530,v1=" + mac + ","},
		{"an element with no value", "t=1795258530,v1=" + mac + ",x="},
		{"an element with no key", "t=1795258530,v1=" + mac + ",=y"},
		{"semicolons", "t=1795258530;v1=" + mac},
		{"4097 bytes", pad(sig, 4097)},
		{"4096 characters but more bytes", pad(sig, 4095) + "é"},
	} {
		vs = append(vs, vector{Name: "malformed: " + bad.name, Headers: replaced(bad.sig), Want: "malformed_header"})
	}
	vs = append(vs, vector{Name: "malformed: the first of two Service-Signature headers", Headers: with(h, webhookverify.HeaderSignature, "garbage", sig), Want: "malformed_header"})

	// Secrets of zero bytes only: as an HMAC key, the empty key.
	vs = append(vs,
		vector{Name: "no secret: a zero byte, the delivery signed with the empty key", Headers: delivered(t, body, "", signedAt), Secrets: []string{"\x00"}, Want: "no_secret"},
		vector{Name: "no secret: the prefix and zero bytes", Headers: delivered(t, body, "whsec_\x00\x00", signedAt), Secrets: []string{"whsec_\x00\x00"}, Want: "no_secret"},
		vector{Name: "no secret: base64 of zero bytes, though the pds key is the whole string", Headers: delivered(t, body, "whsec_AAAA", signedAt), Secrets: []string{"whsec_AAAA"}, Want: "no_secret"},
		vector{Name: "no secret: base64 of zero bytes in white space", Headers: h, Secrets: []string{current, "whsec_ AA==\n"}, Want: "no_secret"},
		vector{Name: "valid: a zero byte beside other text is key material", Headers: delivered(t, body, "whsec_\x00a", signedAt), Secrets: []string{"whsec_\x00a"}, Want: "ok"},
		vector{Name: "valid: base64 of zero bytes and a one is key material", Headers: delivered(t, body, "whsec_AAAAAQ==", signedAt), Secrets: []string{"whsec_AAAAAQ=="}, Want: "ok"},
		vector{Name: "valid: empty webhook-* headers leave a pds delivery a pds delivery", Headers: with(with(h, webhookverify.HeaderStandardID, ""), webhookverify.HeaderStandardSignature, ""), Want: "ok"},
	)
	vs = append(vs, standardVectors(t, body)...)

	for i := range vs {
		v := &vs[i]
		if v.Body == nil {
			v.Body = body
		}
		if v.Secrets == nil {
			v.Secrets = currentOnly
		}
		if v.Now == 0 {
			v.Now = now
		}
	}
	return vs
}

// TestReceiverSnippetsAgreeWithGo makes the Go verifier, then the Node and
// Python snippets, decide every vector, and fails on any decision that is
// not the expected one: the same kind of error, not just a refusal.
func TestReceiverSnippetsAgreeWithGo(t *testing.T) {
	vs := vectors(t)
	seen := map[string]int{}
	for _, v := range vs {
		err := webhookverify.Verify(v.Headers, v.Body, v.Secrets, time.Unix(v.Now, 0), webhookverify.Options{Tolerance: time.Duration(v.Tolerance) * time.Second})
		if got := kindOf(err); got != v.Want {
			t.Errorf("%s: the Go verifier decides %s, the vector says %s", v.Name, got, v.Want)
		}
		seen[v.Want]++
	}
	for _, kind := range []string{"ok", "no_secret", "missing_header", "malformed_header", "timestamp_headers", "timestamp", "no_match"} {
		if seen[kind] == 0 {
			t.Errorf("no vector expects %s", kind)
		}
	}
	if t.Failed() {
		t.FailNow() // wrong vectors would make the snippets' results meaningless
	}
	file := filepath.Join(t.TempDir(), "vectors.json")
	data, err := json.MarshalIndent(vs, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}

	for _, snippet := range []struct{ name, tool string }{
		{"node", "node"},
		{"python", "python3"},
	} {
		t.Run(snippet.name, func(t *testing.T) {
			if _, err := exec.LookPath(snippet.tool); err != nil {
				if os.Getenv("CI") != "" {
					t.Fatalf("%s is not on PATH, and CI must check the %s snippet: %v", snippet.tool, snippet.name, err)
				}
				t.Skipf("%s is not on PATH, so the %s snippet is not checked (under CI this fails)", snippet.tool, snippet.name)
			}
			args := map[string][]string{
				"node": {"verify-node/run_vectors.mjs", file},
				// -B: no __pycache__ written into the source tree.
				"python": {"-B", "verify-python/run_vectors.py", file},
			}[snippet.name]
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, snippet.tool, args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s %s: %v\n%s", snippet.tool, strings.Join(args, " "), err, stderr.String())
			}
			var results []struct{ Name, Got string }
			if err := json.Unmarshal(out, &results); err != nil {
				t.Fatalf("%s printed what is not the expected JSON: %v\n%s", snippet.tool, err, out)
			}
			if len(results) != len(vs) {
				t.Fatalf("%d results for %d vectors", len(results), len(vs))
			}
			for i, r := range results {
				if r.Name != vs[i].Name || r.Got != vs[i].Want {
					t.Errorf("%s: the %s snippet decides %s, Go decides %s", vs[i].Name, snippet.name, r.Got, vs[i].Want)
				}
			}
			if !t.Failed() {
				t.Logf("the %s snippet decides all %d vectors as the Go verifier does", snippet.name, len(vs))
			}
		})
	}
}
