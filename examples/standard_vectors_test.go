package examples

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/webhook"
	"github.com/pds-dev/pds/pkg/webhookverify"
)

const (
	deliveryID = "5f0c2a3e9b8d4c1fa7e6d5c4b3a29180"
	// someoneElse is a Standard Webhooks secret no vector signs with.
	someoneElse = "whsec_c29tZW9uZS1lbHNlLXNvbWVvbmUtZWxzZS1zb21lb25lLWVs"
)

// standardDelivered is what pds sends to a subscription of the Standard
// Webhooks scheme: its Service-* headers, signed the pds way with the first
// secret, and webhook-id, webhook-timestamp and webhook-signature, signed
// with every secret (two during a rotation's overlap).
func standardDelivered(t *testing.T, id string, body []byte, secrets []string, at time.Time) http.Header {
	t.Helper()
	h := delivered(t, body, secrets[0], at)
	if err := webhook.SetStandardHeaders(h, domain.Delivery{ID: id, Body: body}, secrets, at); err != nil {
		t.Fatal(err)
	}
	return h
}

// standardOnly keeps the three Standard Webhooks headers of h.
func standardOnly(h http.Header) http.Header {
	out := http.Header{}
	for _, name := range []string{webhookverify.HeaderStandardID, webhookverify.HeaderStandardTimestamp, webhookverify.HeaderStandardSignature} {
		out.Set(name, h.Get(name))
	}
	return out
}

// rawStandardSignature signs the Standard way with any key, even one
// SignStandard refuses.
func rawStandardSignature(key []byte, id, ts string, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + ts + "."))
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// standardVectors are the Standard Webhooks deliveries: what pds sends under
// that scheme, and each way it can fail. Their names start "standard".
func standardVectors(t *testing.T, body []byte) []vector {
	const ts = "1795258530"
	now := signedAt.Unix()
	sh := standardDelivered(t, deliveryID, body, []string{current}, signedAt)
	sig := sh.Get(webhookverify.HeaderStandardSignature)
	mac := strings.TrimPrefix(sig, "v1,")
	rotation := standardDelivered(t, deliveryID, body, []string{current, previous}, signedAt)
	replaced := func(name, value string) http.Header { return with(sh, name, value) }
	signature := func(value string) http.Header { return replaced(webhookverify.HeaderStandardSignature, value) }
	pad := func(sig string, size int) string { // sig and an element of another version, size bytes in all
		return sig + " x," + strings.Repeat("y", size-len(sig)-len(" x,"))
	}
	// The same 32 bytes in another base64 text: the last character's unused
	// bits set.
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	nonCanonical := mac[:42] + string(alphabet[strings.IndexByte(alphabet, mac[42])|1]) + "="
	reindented := bytes.ReplaceAll(body, []byte(","), []byte(", ")) // as a JSON encoder with spaces writes it
	notUTF8 := []byte{0xff, 0xfe, '{', 0x80, '}'}
	signed := func(id string, b []byte, secrets ...string) http.Header {
		return standardOnly(standardDelivered(t, id, b, secrets, signedAt))
	}
	zeroKeyed := signature(rawStandardSignature(nil, deliveryID, ts, body)) // signed with the empty key
	zeros33 := "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 33))

	vs := []vector{
		// Authentic deliveries.
		{Name: "standard valid: the headers pds sends under standard-webhooks (both sets)", Headers: sh, Want: "ok"},
		{Name: "standard valid: the Standard headers alone", Headers: standardOnly(sh), Want: "ok"},
		{Name: "standard valid: a rotation's overlap, two signatures, the receiver knows the new secret", Headers: rotation, Want: "ok"},
		{Name: "standard valid: a rotation's overlap, two signatures, the receiver knows only the old secret", Headers: rotation, Secrets: []string{previous}, Want: "ok"},
		{Name: "standard valid: a rotation's overlap, two signatures, the receiver knows both", Headers: rotation, Secrets: []string{previous, current}, Want: "ok"},
		{Name: "standard valid: signed with the second of the receiver's two secrets", Headers: sh, Secrets: []string{previous, current}, Want: "ok"},
		{Name: "standard valid: 300 s late, the default tolerance's edge", Headers: sh, Now: now + 300, Want: "ok"},
		{Name: "standard valid: 300 s early, the default tolerance's edge", Headers: sh, Now: now - 300, Want: "ok"},
		{Name: "standard valid: 3600 s late under a tolerance of 3600 s", Headers: sh, Tolerance: 3600, Now: now + 3600, Want: "ok"},
		{Name: "standard valid: signatures of other versions (v1a, v2) are skipped", Headers: signature("v1a," + strings.Repeat("A", 86) + "== " + sig + " v2,x"), Want: "ok"},
		{Name: "standard valid: Service-Signature is not read (garbage)", Headers: replaced(webhookverify.HeaderSignature, "garbage"), Want: "ok"},
		{Name: "standard valid: Service-Timestamp is not read (not t)", Headers: replaced(webhookverify.HeaderTimestamp, "1795258531"), Want: "ok"},
		{Name: "standard valid: a second webhook-signature header is not read", Headers: with(sh, webhookverify.HeaderStandardSignature, sig, "garbage"), Want: "ok"},
		{Name: "standard valid: an id of the Standard Webhooks kind (msg_...)", Headers: signed("msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", body, current), Want: "ok"},
		{Name: "standard valid: an id of every visible ASCII character", Headers: signed("!\"#$%&'()*+,-./09:;<=>?@AZ[\\]^_`az{|}~", body, current), Want: "ok"},
		{Name: "standard valid: an empty body", Headers: signed(deliveryID, []byte{}, current), Body: []byte{}, Want: "ok"},
		{Name: "standard valid: a body that is not UTF-8", Headers: signed(deliveryID, notUTF8, current), Body: notUTF8, Want: "ok"},
		{Name: "standard valid: a webhook-signature of exactly 4096 bytes", Headers: signature(pad(sig, 4096)), Want: "ok"},
		{Name: "standard valid: the secret's base64 without the whsec_ prefix", Headers: sh, Secrets: []string{strings.TrimPrefix(current, "whsec_")}, Want: "ok"},

		// No signature matches.
		{Name: "standard no match: the body tampered with", Headers: sh, Body: bytes.Replace(body, []byte("updated"), []byte("created"), 1), Want: "no_match"},
		{Name: "standard no match: a newline added to the body", Headers: sh, Body: append(append([]byte{}, body...), '\n'), Want: "no_match"},
		{Name: "standard no match: the body re-serialized", Headers: sh, Body: reindented, Want: "no_match"},
		{Name: "standard no match: the wrong secret", Headers: sh, Secrets: []string{previous}, Want: "no_match"},
		{Name: "standard no match: two wrong secrets", Headers: sh, Secrets: []string{previous, someoneElse}, Want: "no_match"},
		{Name: "standard no match: the rotation's overlap over, the receiver knows only the old secret", Headers: sh, Secrets: []string{previous}, Want: "no_match"},
		{Name: "standard no match: webhook-id changed (the id is signed)", Headers: replaced(webhookverify.HeaderStandardID, "5f0c2a3e9b8d4c1fa7e6d5c4b3a29181"), Want: "no_match"},
		{Name: "standard no match: webhook-timestamp moved, the signature kept (it is signed)", Headers: replaced(webhookverify.HeaderStandardTimestamp, "1795258531"), Want: "no_match"},
		{Name: "standard no match: keyed with the whole whsec_ string, as the pds scheme is", Headers: signature(rawStandardSignature([]byte(current), deliveryID, ts, body)), Want: "no_match"},
		{Name: "standard no match: the same bytes in other base64 text (unused bits set)", Headers: signature("v1," + nonCanonical), Want: "no_match"},
		{Name: "standard no match: the signature of another body", Headers: signature(standardDelivered(t, deliveryID, []byte(`{}`), []string{current}, signedAt).Get(webhookverify.HeaderStandardSignature)), Want: "no_match"},
		{Name: "standard no match: a valid Service-Signature does not help", Headers: signature(rotation.Get(webhookverify.HeaderStandardSignature)), Secrets: []string{someoneElse}, Want: "no_match"},

		// Outside the tolerance.
		{Name: "standard timestamp: 301 s late (old)", Headers: sh, Now: now + 301, Want: "timestamp"},
		{Name: "standard timestamp: 301 s early (in the future)", Headers: sh, Now: now - 301, Want: "timestamp"},
		{Name: "standard timestamp: 61 s early under a tolerance of 60 s", Headers: sh, Tolerance: 60, Now: now - 61, Want: "timestamp"},
		{Name: "standard timestamp: an hour old, during a rotation", Headers: rotation, Secrets: []string{previous}, Now: now + 3600, Want: "timestamp"},
		{Name: "standard timestamp: 0", Headers: replaced(webhookverify.HeaderStandardTimestamp, "0"), Want: "timestamp"},
		{Name: "standard timestamp: the largest int64, compared without overflow", Headers: replaced(webhookverify.HeaderStandardTimestamp, "9223372036854775807"), Want: "timestamp"},

		// A header missing.
		{Name: "standard missing: no webhook-signature (the pds headers valid)", Headers: with(sh, webhookverify.HeaderStandardSignature), Want: "missing_header"},
		{Name: "standard missing: an empty webhook-signature", Headers: signature(""), Want: "missing_header"},
		{Name: "standard missing: no webhook-id", Headers: with(sh, webhookverify.HeaderStandardID), Want: "missing_header"},
		{Name: "standard missing: no webhook-timestamp", Headers: with(sh, webhookverify.HeaderStandardTimestamp), Want: "missing_header"},
		{Name: "standard missing: webhook-id alone beside a valid pds delivery", Headers: with(delivered(t, body, current, signedAt), webhookverify.HeaderStandardID, deliveryID), Want: "missing_header"},
		{Name: "standard missing: webhook-signature alone", Headers: http.Header{"Webhook-Signature": {sig}}, Want: "missing_header"},

		// No key material, or not a Standard Webhooks secret.
		{Name: "standard no secret: base64 of zero bytes, the delivery signed with the empty key", Headers: zeroKeyed, Secrets: []string{"whsec_AAAAAAAA"}, Want: "no_secret"},
		{Name: "standard no secret: base64 of 33 zero bytes, as long as pds's secrets", Headers: zeroKeyed, Secrets: []string{zeros33}, Want: "no_secret"},
		{Name: "standard no secret: a zero byte", Headers: zeroKeyed, Secrets: []string{"\x00"}, Want: "no_secret"},
		{Name: "standard no secret: an empty list", Headers: sh, Secrets: []string{}, Want: "no_secret"},
		{Name: "standard no secret: the prefix alone", Headers: zeroKeyed, Secrets: []string{"whsec_"}, Want: "no_secret"},
		{Name: "standard no secret: an empty secret beside a valid one", Headers: sh, Secrets: []string{current, ""}, Want: "no_secret"},
		{Name: "standard no secret: not base64 (the pds scheme would take it)", Headers: sh, Secrets: []string{"whsec_someone-else"}, Want: "no_secret"},
		{Name: "standard no secret: not base64, beside a valid secret", Headers: sh, Secrets: []string{current, "whsec_someone-else"}, Want: "no_secret"},
		{Name: "standard no secret: base64 and a newline", Headers: sh, Secrets: []string{current + "\n"}, Want: "no_secret"},
		{Name: "standard no secret: base64 without its padding", Headers: sh, Secrets: []string{"whsec_Y3VycmVudA"}, Want: "no_secret"},
		{Name: "standard no secret: URL-safe base64", Headers: sh, Secrets: []string{"whsec_-_8="}, Want: "no_secret"},
		{Name: "standard no secret: refused before the headers are read", Headers: http.Header{"Webhook-Id": {deliveryID}}, Secrets: []string{"whsec_someone-else"}, Want: "no_secret"},
	}

	// Malformed headers, beside the rest of what pds sends.
	for _, bad := range []struct{ name, header, value string }{
		{"an id with a space", webhookverify.HeaderStandardID, "msg 1"},
		{"an id with a tab", webhookverify.HeaderStandardID, "msg\t1"},
		{"an id with a non-ASCII letter", webhookverify.HeaderStandardID, "msg_é"},
		{"an id with a DEL", webhookverify.HeaderStandardID, "msg\x7f"},
		{"an id of 4097 bytes", webhookverify.HeaderStandardID, strings.Repeat("a", 4097)},
		{"a timestamp not a number", webhookverify.HeaderStandardTimestamp, "abc"},
		{"a timestamp then letters (parseInt takes it)", webhookverify.HeaderStandardTimestamp, ts + "abc"},
		{"a negative timestamp", webhookverify.HeaderStandardTimestamp, "-5"},
		{"a timestamp with a plus sign", webhookverify.HeaderStandardTimestamp, "+" + ts},
		{"a timestamp with a leading zero", webhookverify.HeaderStandardTimestamp, "0" + ts},
		{"a timestamp with a fraction", webhookverify.HeaderStandardTimestamp, ts + ".0"},
		{"a timestamp in white space", webhookverify.HeaderStandardTimestamp, " " + ts},
		{"a timestamp with underscores (Python's int takes them)", webhookverify.HeaderStandardTimestamp, "1_795_258_530"},
		{"a timestamp in Arabic-Indic digits (Python's int takes them)", webhookverify.HeaderStandardTimestamp, "١٧٩٥٢٥٨٥٣٠"},
		{"a timestamp of 2^63, beyond int64", webhookverify.HeaderStandardTimestamp, "9223372036854775808"},
		{"a timestamp of 23 digits", webhookverify.HeaderStandardTimestamp, "99999999999999999999999"},
		{"garbage", webhookverify.HeaderStandardSignature, "garbage"},
		{"v1 alone", webhookverify.HeaderStandardSignature, "v1"},
		{"v1 and a comma", webhookverify.HeaderStandardSignature, "v1,"},
		{"no version", webhookverify.HeaderStandardSignature, "," + mac},
		{"no v1, only v1a", webhookverify.HeaderStandardSignature, "v1a," + mac},
		{"v1 in hex, as the pds scheme writes it", webhookverify.HeaderStandardSignature, "v1," + strings.Repeat("ab", 32)},
		{"the pds scheme's header", webhookverify.HeaderStandardSignature, "t=1795258530,v1=" + strings.Repeat("ab", 32)},
		{"v1 without its padding", webhookverify.HeaderStandardSignature, "v1," + mac[:43]},
		{"v1 with a character of URL-safe base64", webhookverify.HeaderStandardSignature, "v1,-" + mac[1:]},
		{"v1 of 31 bytes in 44 characters", webhookverify.HeaderStandardSignature, "v1," + base64.StdEncoding.EncodeToString(make([]byte, 31))},
		{"v1 of 33 bytes", webhookverify.HeaderStandardSignature, "v1," + base64.StdEncoding.EncodeToString(make([]byte, 33))},
		{"v1 then a comma", webhookverify.HeaderStandardSignature, sig + ","},
		{"v1 then a BOM", webhookverify.HeaderStandardSignature, sig + "\ufeff"},
		{"a leading space", webhookverify.HeaderStandardSignature, " " + sig},
		{"a trailing space", webhookverify.HeaderStandardSignature, sig + " "},
		{"two spaces between signatures", webhookverify.HeaderStandardSignature, sig + "  " + sig},
		{"a tab between signatures", webhookverify.HeaderStandardSignature, sig + "\t" + sig},
		{"a comma between signatures", webhookverify.HeaderStandardSignature, sig + "," + sig},
		{"a webhook-signature of 4097 bytes", webhookverify.HeaderStandardSignature, pad(sig, 4097)},
		{"4096 characters but more bytes", webhookverify.HeaderStandardSignature, pad(sig, 4095) + "é"},
	} {
		vs = append(vs, vector{Name: "standard malformed: " + bad.name, Headers: replaced(bad.header, bad.value), Want: "malformed_header"})
	}
	vs = append(vs, vector{Name: "standard malformed: the first of two webhook-signature headers", Headers: with(sh, webhookverify.HeaderStandardSignature, "garbage", sig), Want: "malformed_header"})
	return vs
}
