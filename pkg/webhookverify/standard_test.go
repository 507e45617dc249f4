package webhookverify_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/pkg/webhookverify"
)

const (
	id = "0123456789abcdef0123456789abcdef"
	// knownStandard was computed outside Go: printf '%s' "$id.1795258530.$body" |
	// openssl dgst -sha256 -mac HMAC -macopt hexkey:<hex of the base64-decoded
	// secret after whsec_> -binary | base64.
	knownStandard = "4tm7NyEQg6g/TrOlqDGx1phRTZoNkGrI+q+YiiLNL/M="
	// other is a second Standard Webhooks secret, for rotations.
	other = "whsec_b3RoZXItc2VjcmV0LW90aGVyLXNlY3JldC1vdGhlcg=="
)

// standardHeaders is a Standard Webhooks delivery's three headers; an empty
// value leaves its header out.
func standardHeaders(id, ts, sig string) http.Header {
	h := http.Header{}
	for name, v := range map[string]string{
		webhookverify.HeaderStandardID:        id,
		webhookverify.HeaderStandardTimestamp: ts,
		webhookverify.HeaderStandardSignature: sig,
	} {
		if v != "" {
			h.Set(name, v)
		}
	}
	return h
}

// rawStandard signs the Standard way with a key given as bytes, even one
// SignStandard refuses (the empty key).
func rawStandard(key []byte, id, ts, body string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + ts + "." + body))
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

func TestSignStandardMatchesAnIndependentHMAC(t *testing.T) {
	t.Parallel()
	got, err := webhookverify.SignStandard([]string{secret}, id, signedAt, []byte(body))
	if err != nil || got != "v1,"+knownStandard {
		t.Fatalf("SignStandard = %q, %v; want v1,%s", got, err, knownStandard)
	}
	// One signature per secret, in the order given, separated by a space.
	two, err := webhookverify.SignStandard([]string{other, secret}, id, signedAt, []byte(body))
	first, _ := webhookverify.SignStandard([]string{other}, id, signedAt, []byte(body))
	if err != nil || two != first+" v1,"+knownStandard {
		t.Fatalf("SignStandard of two secrets = %q, %v; want %q", two, err, first+" v1,"+knownStandard)
	}
}

func TestSignStandardRefuses(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		secrets  []string
		id       string
		noSecret bool
	}{
		{"no secrets", nil, id, true},
		{"an empty secret", []string{secret, ""}, id, true},
		{"a secret of zero bytes", []string{"whsec_AAAAAAAA"}, id, true},
		{"a secret that is not base64", []string{"whsec_current-secret"}, id, true},
		{"an empty id", []string{secret}, "", false},
		{"an id with a space", []string{secret}, "a b", false},
		{"an id with a non-ASCII character", []string{secret}, "é", false},
		{"an id of 4097 bytes", []string{secret}, strings.Repeat("a", 4097), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			sig, err := webhookverify.SignStandard(c.secrets, c.id, signedAt, []byte(body))
			if err == nil || sig != "" || errors.Is(err, webhookverify.ErrNoSecret) != c.noSecret {
				t.Fatalf("SignStandard = %q, %v", sig, err)
			}
		})
	}
}

func TestVerifyStandard(t *testing.T) {
	t.Parallel()
	const ts = "1795258530"
	sig := "v1," + knownStandard
	h := standardHeaders(id, ts, sig)
	verify := func(h http.Header, b string, secrets []string, now time.Time, opts webhookverify.Options) []error {
		return []error{
			webhookverify.Verify(h, []byte(b), secrets, now, opts),
			webhookverify.VerifyStandard(h, []byte(b), secrets, now, opts),
		}
	}
	ok := func(t *testing.T, h http.Header, b string, secrets []string, now time.Time) {
		t.Helper()
		for _, err := range verify(h, b, secrets, now, webhookverify.Options{}) {
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
		}
	}
	fail := func(t *testing.T, h http.Header, b string, secrets []string, now time.Time, want error) {
		t.Helper()
		for _, err := range verify(h, b, secrets, now, webhookverify.Options{}) {
			if !errors.Is(err, want) || !errors.Is(err, webhookverify.ErrInvalid) {
				t.Fatalf("Verify = %v, want %v", err, want)
			}
		}
	}
	t.Run("valid", func(t *testing.T) {
		ok(t, h, body, []string{secret}, signedAt)
	})
	t.Run("header names in any case", func(t *testing.T) {
		ok(t, http.Header{"Webhook-Id": {id}, "Webhook-Timestamp": {ts}, "Webhook-Signature": {sig}}, body, []string{secret}, signedAt)
	})
	t.Run("tolerance is 300 s in both directions", func(t *testing.T) {
		ok(t, h, body, []string{secret}, signedAt.Add(300*time.Second))
		ok(t, h, body, []string{secret}, signedAt.Add(-300*time.Second))
		fail(t, h, body, []string{secret}, signedAt.Add(301*time.Second), webhookverify.ErrTimestamp)
		fail(t, h, body, []string{secret}, signedAt.Add(-301*time.Second), webhookverify.ErrTimestamp)
	})
	t.Run("a custom tolerance", func(t *testing.T) {
		for _, err := range verify(h, body, []string{secret}, signedAt.Add(time.Hour), webhookverify.Options{Tolerance: 2 * time.Hour}) {
			if err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("a rotation: two signatures, the receiver knows either secret", func(t *testing.T) {
		both, err := webhookverify.SignStandard([]string{other, secret}, id, signedAt, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		for _, secrets := range [][]string{{secret}, {other}, {other, secret}} {
			ok(t, standardHeaders(id, ts, both), body, secrets, signedAt)
		}
		fail(t, standardHeaders(id, ts, both), body, []string{"whsec_c29tZW9uZS1lbHNl"}, signedAt, webhookverify.ErrNoMatch)
	})
	t.Run("the receiver's second secret", func(t *testing.T) {
		ok(t, h, body, []string{other, secret}, signedAt)
	})
	t.Run("other versions are skipped", func(t *testing.T) {
		ok(t, standardHeaders(id, ts, "v1a,"+strings.Repeat("A", 86)+"== "+sig+" v2,x"), body, []string{secret}, signedAt)
	})
	t.Run("no match", func(t *testing.T) {
		fail(t, h, body+" ", []string{secret}, signedAt, webhookverify.ErrNoMatch)
		fail(t, h, body, []string{other}, signedAt, webhookverify.ErrNoMatch)
		fail(t, standardHeaders(id+"0", ts, sig), body, []string{secret}, signedAt, webhookverify.ErrNoMatch)
		fail(t, standardHeaders(id, "1795258531", sig), body, []string{secret}, signedAt, webhookverify.ErrNoMatch)
		// The key is the decoded secret, not the whole string as in the pds scheme.
		fail(t, standardHeaders(id, ts, rawStandard([]byte(secret), id, ts, body)), body, []string{secret}, signedAt, webhookverify.ErrNoMatch)
		// The base64 text is compared, as the official libraries compare it:
		// the same bytes with the padding bits set do not match.
		fail(t, standardHeaders(id, ts, "v1,"+knownStandard[:42]+"N="), body, []string{secret}, signedAt, webhookverify.ErrNoMatch)
	})
	t.Run("missing", func(t *testing.T) {
		fail(t, standardHeaders("", ts, sig), body, []string{secret}, signedAt, webhookverify.ErrMissingHeader)
		fail(t, standardHeaders(id, "", sig), body, []string{secret}, signedAt, webhookverify.ErrMissingHeader)
		fail(t, standardHeaders(id, ts, ""), body, []string{secret}, signedAt, webhookverify.ErrMissingHeader)
	})
	for _, bad := range []struct{ name, id, ts, sig string }{
		{"an id with a space", "a b", ts, sig},
		{"an id with a dot is fine, but not with a tab", "msg.1\t", ts, sig},
		{"a non-ASCII id", "msg_é", ts, sig},
		{"an id of 4097 bytes", strings.Repeat("a", 4097), ts, sig},
		{"a timestamp not a number", id, "abc", sig},
		{"a negative timestamp", id, "-5", sig},
		{"a timestamp with a sign", id, "+" + ts, sig},
		{"a timestamp with a leading zero", id, "0" + ts, sig},
		{"a timestamp with a fraction", id, ts + ".0", sig},
		{"a timestamp with white space", id, " " + ts, sig},
		{"a timestamp of 2^63", id, "9223372036854775808", sig},
		{"a timestamp of 23 digits", id, "99999999999999999999999", sig},
		{"garbage", id, ts, "garbage"},
		{"v1 alone", id, ts, "v1"},
		{"v1 and a comma", id, ts, "v1,"},
		{"no version", id, ts, "," + knownStandard},
		{"no v1, only v1a", id, ts, "v1a," + knownStandard},
		{"v1 in hex (the pds scheme's)", id, ts, "v1," + strings.Repeat("ab", 32)},
		{"v1 without its padding", id, ts, "v1," + knownStandard[:43]},
		{"v1 of 31 bytes, 44 characters", id, ts, "v1," + base64.StdEncoding.EncodeToString(make([]byte, 31))},
		{"v1 in URL-safe base64", id, ts, "v1," + strings.NewReplacer("+", "-", "/", "_").Replace(knownStandard)},
		{"v1 of 33 bytes", id, ts, "v1," + base64.StdEncoding.EncodeToString(make([]byte, 33))},
		{"v1 then a comma", id, ts, sig + ","},
		{"a trailing space", id, ts, sig + " "},
		{"a leading space", id, ts, " " + sig},
		{"two spaces between signatures", id, ts, sig + "  " + sig},
		{"a tab between signatures", id, ts, sig + "\t" + sig},
		{"a comma between signatures", id, ts, sig + "," + sig},
		{"4097 bytes", id, ts, sig + " x," + strings.Repeat("y", 4097-len(sig)-3)},
	} {
		t.Run("malformed: "+bad.name, func(t *testing.T) {
			fail(t, standardHeaders(bad.id, bad.ts, bad.sig), body, []string{secret}, signedAt, webhookverify.ErrMalformedHeader)
		})
	}
	t.Run("a header of 4096 bytes is not too long", func(t *testing.T) {
		ok(t, standardHeaders(id, ts, sig+" x,"+strings.Repeat("y", 4096-len(sig)-3)), body, []string{secret}, signedAt)
	})
	t.Run("a far-future timestamp is refused, not overflowed", func(t *testing.T) {
		far, err := webhookverify.SignStandard([]string{secret}, id, time.Unix(1<<62, 0), []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		fail(t, standardHeaders(id, "4611686018427387904", far), body, []string{secret}, signedAt, webhookverify.ErrTimestamp)
		fail(t, standardHeaders(id, "9223372036854775807", sig), body, []string{secret}, signedAt, webhookverify.ErrTimestamp)
		fail(t, standardHeaders(id, "0", sig), body, []string{secret}, signedAt, webhookverify.ErrTimestamp)
	})
}

// TestTheHeadersChooseTheScheme: a delivery carrying any webhook-* header is
// verified by the Standard headers alone; any other the pds way.
func TestTheHeadersChooseTheScheme(t *testing.T) {
	t.Parallel()
	pds := headers(webhookverify.Sign(secret, signedAt, []byte(body)))
	pds.Set(webhookverify.HeaderTimestamp, "1795258530")
	both := func(id, ts, sig string) http.Header {
		h := standardHeaders(id, ts, sig)
		for name, v := range pds {
			h[name] = v
		}
		return h
	}
	sig := "v1," + knownStandard
	for _, c := range []struct {
		name     string
		h        http.Header
		standard bool
		want     error // nil: verifies
	}{
		{"pds headers alone", pds, false, nil},
		{"Standard headers alone", standardHeaders(id, "1795258530", sig), true, nil},
		{"both sets, both valid", both(id, "1795258530", sig), true, nil},
		{"both sets, the Service-* ones not read", with(both(id, "1795258530", sig), webhookverify.HeaderSignature, "garbage"), true, nil},
		{"both sets, Service-Timestamp not read", with(both(id, "1795258530", sig), webhookverify.HeaderTimestamp, "1"), true, nil},
		{"both sets, webhook-signature malformed", both(id, "1795258530", "garbage"), true, webhookverify.ErrMalformedHeader},
		{"both sets, webhook-signature of another body", both(id, "1795258530", rawStandard([]byte("k"), id, "1795258530", body)), true, webhookverify.ErrNoMatch},
		{"a valid pds delivery and webhook-id alone", both(id, "", ""), true, webhookverify.ErrMissingHeader},
		{"a valid pds delivery and an empty webhook-signature", with(pds, webhookverify.HeaderStandardSignature, ""), false, nil},
		{"a valid pds delivery and a second, non-empty webhook-id", with(pds, webhookverify.HeaderStandardID, "", id), false, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := webhookverify.IsStandard(c.h); got != c.standard {
				t.Errorf("IsStandard = %v", got)
			}
			err := webhookverify.Verify(c.h, []byte(body), []string{secret}, signedAt, webhookverify.Options{})
			if (c.want == nil && err != nil) || !errors.Is(err, c.want) {
				t.Errorf("Verify = %v, want %v", err, c.want)
			}
		})
	}
	t.Run("VerifyStandard and VerifySignature read one scheme each", func(t *testing.T) {
		if err := webhookverify.VerifyStandard(pds, []byte(body), []string{secret}, signedAt, webhookverify.Options{}); !errors.Is(err, webhookverify.ErrMissingHeader) {
			t.Errorf("VerifyStandard of a pds delivery = %v, want ErrMissingHeader", err)
		}
		h := both(id, "1795258530", "garbage")
		if err := webhookverify.VerifySignature(h.Get(webhookverify.HeaderSignature), []byte(body), []string{secret}, signedAt, webhookverify.Options{}); err != nil {
			t.Errorf("VerifySignature beside a malformed webhook-signature = %v", err)
		}
	})
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

// TestKeyMaterial: what each entry point refuses, with ErrNoSecret, in each
// scheme. A secret refused in both schemes is refused even for a delivery
// signed with the key it amounts to (the empty key); one refused only as a
// Standard Webhooks secret still verifies pds deliveries.
func TestKeyMaterial(t *testing.T) {
	t.Parallel()
	const (
		both     = "refused in both schemes"
		standard = "refused in the Standard scheme"
		none     = "accepted"
	)
	for _, c := range []struct {
		name, secret, refused string
	}{
		{"empty", "", both},
		{"the prefix alone", "whsec_", both},
		{"the prefix and white space", "whsec_ \n", both},
		{"white space", " ", both},
		{"a zero byte (the issue's case)", "\x00", both},
		{"zero bytes", "\x00\x00\x00", both},
		{"the prefix and zero bytes", "whsec_\x00\x00", both},
		{"the prefix, zero bytes and white space", "whsec_\x00 ", both},
		{"base64 of three zero bytes", "whsec_AAAA", both},
		{"base64 of one zero byte", "whsec_AA==", both},
		{"base64 of two zero bytes", "whsec_AAA=", both},
		{"base64 of one zero byte, padding bits set", "whsec_AB==", both},
		{"base64 of 33 zero bytes, as pds's secrets are long", "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 33)), both},
		{"base64 of zero bytes without the prefix", "AAAA", both},
		{"base64 of zero bytes in white space", "whsec_ AAAA\n", both},
		{"base64 of zero bytes and a one", "whsec_AAAAAQ==", none},
		{"a secret as pds issues them", secret, none},
		{"base64 without the prefix", "Y3Vy", none},
		{"short base64", "whsec_Y3Vy", none},
		{"not base64", "whsec_current-secret", standard},
		{"a zero byte and a letter", "whsec_\x00a", standard},
		{"base64 and a newline", "whsec_Y3Vy\n", standard},
		{"base64 with a space inside", "whsec_Y3Vy Y3Vy", standard},
		{"base64 without its padding", "whsec_Y3VycmVudA", standard},
		{"URL-safe base64", "whsec_-_8=", standard},
		{"a doubled prefix", "whsec_whsec_Y3Vy", standard},
		{"a lone padding", "whsec_====", standard},
	} {
		t.Run(c.name, func(t *testing.T) {
			const ts = "1795258530"
			// Signed with the secret where its scheme takes it, otherwise with
			// the empty key, which a secret of zero bytes amounts to.
			pdsSigner, stdKey := c.secret, []byte(nil)
			if c.refused == both {
				pdsSigner = ""
			}
			if c.refused == none {
				stdKey, _ = base64.StdEncoding.DecodeString(strings.TrimPrefix(c.secret, "whsec_"))
			}
			pdsSig := webhookverify.Sign(pdsSigner, signedAt, []byte(body))
			pdsH := headers(pdsSig)
			stdH := standardHeaders(id, ts, rawStandard(stdKey, id, ts, body))
			secrets := []string{c.secret}
			o := webhookverify.Options{}
			_, signErr := webhookverify.SignStandard(secrets, id, signedAt, []byte(body))
			pdsEntries := map[string]error{
				"CheckSecrets":          webhookverify.CheckSecrets(secrets),
				"Verify, pds":           webhookverify.Verify(pdsH, []byte(body), secrets, signedAt, o),
				"VerifySignature":       webhookverify.VerifySignature(pdsSig, []byte(body), secrets, signedAt, o),
				"Verify, pds, a second": webhookverify.Verify(pdsH, []byte(body), []string{secret, c.secret}, signedAt, o),
			}
			stdEntries := map[string]error{
				"CheckStandardSecrets":       webhookverify.CheckStandardSecrets(secrets),
				"Verify, standard":           webhookverify.Verify(stdH, []byte(body), secrets, signedAt, o),
				"VerifyStandard":             webhookverify.VerifyStandard(stdH, []byte(body), secrets, signedAt, o),
				"VerifyStandard, a second":   webhookverify.VerifyStandard(stdH, []byte(body), []string{secret, c.secret}, signedAt, o),
				"SignStandard":               signErr,
				"Verify, standard, no value": webhookverify.Verify(http.Header{"Webhook-Id": {id}}, []byte(body), secrets, signedAt, o),
			}
			check := func(entries map[string]error, refused bool) {
				for entry, err := range entries {
					switch {
					case refused && !errors.Is(err, webhookverify.ErrNoSecret):
						t.Errorf("%s = %v, want ErrNoSecret", entry, err)
					case refused && errors.Is(err, webhookverify.ErrInvalid):
						t.Errorf("%s = %v: a configuration error wraps ErrInvalid", entry, err)
					case !refused && errors.Is(err, webhookverify.ErrNoSecret):
						t.Errorf("%s = %v, want no ErrNoSecret", entry, err)
					case !refused && !strings.HasSuffix(entry, "no value") && err != nil:
						t.Errorf("%s = %v, want nil", entry, err)
					}
				}
			}
			check(pdsEntries, c.refused == both)
			check(stdEntries, c.refused != none)
		})
	}
}

// FuzzVerifyStandard: no headers or body make Verify panic, and it accepts
// only what SignStandard would produce for that id, time and body.
func FuzzVerifyStandard(f *testing.F) {
	f.Add(id, "1795258530", "v1,"+knownStandard, []byte(body))
	f.Add(id, "1795258530", "v1,"+knownStandard+" v1a,x", []byte(body))
	f.Add(id, "9223372036854775807", "v1,"+knownStandard, []byte{})
	f.Add("", "", "v1,", []byte("x"))
	f.Add("a", "-0", "  ,,v1 v1,=", []byte(nil))
	f.Fuzz(func(t *testing.T, id, ts, sig string, b []byte) {
		h := standardHeaders(id, ts, sig)
		err := webhookverify.Verify(h, b, []string{secret}, signedAt, webhookverify.Options{})
		if err == nil {
			want, signErr := webhookverify.SignStandard([]string{secret}, id, signedAt, b)
			if signErr != nil || ts != "1795258530" || !strings.Contains(sig, want) {
				t.Fatalf("accepted %q %q %q for body %q without its signature", id, ts, sig, b)
			}
		}
		if err != nil && !errors.Is(err, webhookverify.ErrInvalid) {
			t.Fatalf("error %v does not wrap ErrInvalid", err)
		}
	})
}
