package webhookverify_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/pkg/webhookverify"
)

const (
	secret = "whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA=="
	body   = `{"id":"0123456789abcdef0123456789abcdef","event":"person.created"}`
	// known was computed outside Go: printf '%s' "1795258530.$body" |
	// openssl dgst -sha256 -hmac "$secret".
	known = "15fc3ee9ad1ac000e7566cbed9365fb4f1445bab0c1c34c2e36fca6431d9e28c"
)

var signedAt = time.Unix(1795258530, 0)

func headers(sig string) http.Header {
	h := http.Header{}
	h.Set(webhookverify.HeaderSignature, sig)
	return h
}

func TestSignMatchesAnIndependentHMAC(t *testing.T) {
	t.Parallel()
	if got, want := webhookverify.Sign(secret, signedAt, []byte(body)), "t=1795258530,v1="+known; got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	sig := "t=1795258530,v1=" + known
	ok := func(t *testing.T, h http.Header, b string, secrets []string, now time.Time) {
		t.Helper()
		if err := webhookverify.Verify(h, []byte(b), secrets, now, webhookverify.Options{}); err != nil {
			t.Fatalf("Verify: %v", err)
		}
	}
	fail := func(t *testing.T, h http.Header, b string, secrets []string, now time.Time, want error) {
		t.Helper()
		err := webhookverify.Verify(h, []byte(b), secrets, now, webhookverify.Options{})
		if !errors.Is(err, want) || !errors.Is(err, webhookverify.ErrInvalid) {
			t.Fatalf("Verify = %v, want %v", err, want)
		}
	}
	t.Run("valid, with the timestamp header too", func(t *testing.T) {
		h := headers(sig)
		h.Set(webhookverify.HeaderTimestamp, "1795258530")
		ok(t, h, body, []string{secret}, signedAt)
	})
	t.Run("tolerance is 300 s in both directions", func(t *testing.T) {
		ok(t, headers(sig), body, []string{secret}, signedAt.Add(300*time.Second))
		ok(t, headers(sig), body, []string{secret}, signedAt.Add(-300*time.Second))
		fail(t, headers(sig), body, []string{secret}, signedAt.Add(301*time.Second), webhookverify.ErrTimestamp)
		fail(t, headers(sig), body, []string{secret}, signedAt.Add(-301*time.Second), webhookverify.ErrTimestamp)
	})
	t.Run("a custom tolerance", func(t *testing.T) {
		err := webhookverify.Verify(headers(sig), []byte(body), []string{secret}, signedAt.Add(time.Hour),
			webhookverify.Options{Tolerance: 2 * time.Hour})
		if err != nil {
			t.Fatal(err)
		}
	})
	t.Run("any one of several secrets", func(t *testing.T) {
		ok(t, headers(sig), body, []string{"whsec_new", secret}, signedAt)
		fail(t, headers(sig), body, []string{"whsec_new", "whsec_other"}, signedAt, webhookverify.ErrNoMatch)
	})
	t.Run("a changed body or a secret without its prefix fails", func(t *testing.T) {
		fail(t, headers(sig), body+" ", []string{secret}, signedAt, webhookverify.ErrNoMatch)
		fail(t, headers(sig), body, []string{strings.TrimPrefix(secret, "whsec_")}, signedAt, webhookverify.ErrNoMatch)
	})
	t.Run("one matching v1 among several is enough; other schemes are skipped", func(t *testing.T) {
		multi := "t=1795258530, v1=" + strings.Repeat("00", 32) + ", v2=whatever, v1=" + known
		ok(t, headers(multi), body, []string{secret}, signedAt)
	})
	t.Run("timestamp header disagreeing with t", func(t *testing.T) {
		h := headers(sig)
		h.Set(webhookverify.HeaderTimestamp, "1795258531")
		fail(t, h, body, []string{secret}, signedAt, webhookverify.ErrTimestampHeaders)
	})
	t.Run("missing header", func(t *testing.T) {
		fail(t, http.Header{}, body, []string{secret}, signedAt, webhookverify.ErrMissingHeader)
	})
	for _, bad := range []string{
		"garbage",
		"t=1795258530",
		"v1=" + known,
		"t=,v1=" + known,
		"t=abc,v1=" + known,
		"t=-5,v1=" + known,
		"t=1795258530,t=1795258530,v1=" + known,
		"t=1795258530,v1=" + known[:63],
		"t=1795258530,v1=zz" + known[2:],
		"t=1795258530,v1=" + known + "00",
		"t=1795258530,,v1=" + known,
		"t=1795258530;v1=" + known,
		"t=99999999999999999999999,v1=" + known,
		"t=1795258530,v1=" + known + "," + strings.Repeat("x=y,", 2000),
	} {
		t.Run("malformed "+bad[:min(len(bad), 40)], func(t *testing.T) {
			fail(t, headers(bad), body, []string{secret}, signedAt, webhookverify.ErrMalformedHeader)
		})
	}
	t.Run("a far-future t is refused, not overflowed", func(t *testing.T) {
		far := webhookverify.Sign(secret, time.Unix(1<<62, 0), []byte(body))
		fail(t, headers(far), body, []string{secret}, signedAt, webhookverify.ErrTimestamp)
	})
}

// TestSecretsWithoutKeyMaterialAreRefused: every entry point that takes
// secrets refuses an empty list, an empty secret and the prefix alone with
// ErrNoSecret (a configuration error, not ErrInvalid), even for a delivery
// signed with that very key; a list holding one such entry is refused as a
// whole.
func TestSecretsWithoutKeyMaterialAreRefused(t *testing.T) {
	for _, c := range []struct {
		name    string
		secrets []string
		signer  string // the key the delivery is signed with
		refused bool
	}{
		{"nil list", nil, "", true},
		{"empty list", []string{}, "", true},
		{"empty secret", []string{""}, "", true},
		{"prefix alone", []string{"whsec_"}, "whsec_", true},
		{"prefix and white space", []string{"whsec_ \n"}, "whsec_ \n", true},
		{"white space", []string{" "}, " ", true},
		{"valid secret", []string{secret}, secret, false},
		{"an empty and a valid secret", []string{"", secret}, secret, true},
		{"a valid secret and the prefix alone", []string{secret, "whsec_"}, secret, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			sig := webhookverify.Sign(c.signer, signedAt, []byte(body))
			h := headers(sig)
			h.Set(webhookverify.HeaderTimestamp, "1795258530")
			errs := map[string]error{
				"CheckSecrets":    webhookverify.CheckSecrets(c.secrets),
				"Verify":          webhookverify.Verify(h, []byte(body), c.secrets, signedAt, webhookverify.Options{}),
				"VerifySignature": webhookverify.VerifySignature(sig, []byte(body), c.secrets, signedAt, webhookverify.Options{}),
				// Refused before the delivery is looked at.
				"Verify, no header": webhookverify.Verify(http.Header{}, []byte(body), c.secrets, signedAt, webhookverify.Options{}),
			}
			for entry, err := range errs {
				switch {
				case c.refused && !errors.Is(err, webhookverify.ErrNoSecret):
					t.Errorf("%s = %v, want ErrNoSecret", entry, err)
				case c.refused && errors.Is(err, webhookverify.ErrInvalid):
					t.Errorf("%s = %v: a configuration error wraps ErrInvalid", entry, err)
				case !c.refused && entry == "Verify, no header":
					if !errors.Is(err, webhookverify.ErrMissingHeader) {
						t.Errorf("%s = %v, want ErrMissingHeader", entry, err)
					}
				case !c.refused && err != nil:
					t.Errorf("%s = %v, want nil", entry, err)
				}
			}
		})
	}
	if !errors.Is(webhookverify.ErrNoSecrets, webhookverify.ErrNoSecret) {
		t.Error("the deprecated ErrNoSecrets is not ErrNoSecret")
	}
}

// FuzzVerify: no header or body makes Verify panic, and it accepts only
// what Sign would produce for that body and time.
func FuzzVerify(f *testing.F) {
	f.Add("t=1795258530,v1="+known, []byte(body))
	f.Add("t=1795258530,v1="+known+",v1=00", []byte(body))
	f.Add("t=9223372036854775807,v1="+known, []byte{})
	f.Add("t=1795258530,v1=,", []byte("x"))
	f.Add(",,==,t==", []byte(nil))
	f.Fuzz(func(t *testing.T, header string, b []byte) {
		err := webhookverify.Verify(headers(header), b, []string{secret}, signedAt, webhookverify.Options{})
		if err == nil && !strings.Contains(strings.ToLower(header), webhookverify.Sign(secret, signedAt, b)[len("t=1795258530,"):]) {
			t.Fatalf("accepted header %q for body %q without its signature", header, b)
		}
		if err != nil && !errors.Is(err, webhookverify.ErrInvalid) {
			t.Fatalf("error %v does not wrap ErrInvalid", err)
		}
	})
}
