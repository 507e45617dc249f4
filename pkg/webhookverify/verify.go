// Package webhookverify checks the signature of a pds webhook delivery, for
// receivers written in Go.
//
// A delivery is an HTTP POST whose headers carry
//
//	Service-Timestamp: 1795258530
//	Service-Signature: t=1795258530,v1=<64 hex digits>
//
// where v1 is the hex HMAC-SHA256, keyed with the subscription's full
// signing secret (the whole "whsec_..." string), of the timestamp, a dot
// and the raw request body. Verify the raw body exactly as received, before
// any JSON parsing. A failed verification is an error value, never a panic;
// answer it with a 4xx, which pds does not retry.
//
// Verification needs key material: Verify and VerifySignature refuse, with
// ErrNoSecret, to verify with an empty list of secrets or with a secret that
// is empty or the "whsec_" prefix alone (an unset environment variable, say),
// since a delivery signed with such a key proves nothing. Call CheckSecrets
// when the receiver starts, and refuse to start, rather than discover this at
// the first delivery.
package webhookverify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header names of a delivery.
const (
	HeaderSignature  = "Service-Signature"
	HeaderTimestamp  = "Service-Timestamp"
	HeaderDeliveryID = "Service-Delivery-Id"
	HeaderEvent      = "Service-Event"
	HeaderWebhookID  = "Service-Webhook-Id"
)

// DefaultTolerance is how far the signing time may be from now, in either
// direction, before a delivery is refused as a possible replay.
const DefaultTolerance = 300 * time.Second

// SecretPrefix starts every signing secret pds issues; the key material
// follows it.
const SecretPrefix = "whsec_"

// maxHeaderLength bounds the work spent on a hostile header.
const maxHeaderLength = 4096

// The ways a delivery fails to verify. Each wraps ErrInvalid.
var (
	ErrInvalid          = errors.New("webhookverify: the delivery is not authentic")
	ErrMissingHeader    = fmt.Errorf("%w: the %s header is missing", ErrInvalid, HeaderSignature)
	ErrMalformedHeader  = fmt.Errorf("%w: the signature header is malformed", ErrInvalid)
	ErrTimestamp        = fmt.Errorf("%w: the signing time is outside the tolerance", ErrInvalid)
	ErrNoMatch          = fmt.Errorf("%w: no signature matches the body under any of the secrets", ErrInvalid)
	ErrTimestampHeaders = fmt.Errorf("%w: %s differs from t in %s", ErrInvalid, HeaderTimestamp, HeaderSignature)
)

// ErrNoSecret is returned, before the delivery is looked at, when the
// secrets hold no key material: the list is empty, or any one of them is
// empty or the SecretPrefix alone (possibly with white space). A list with
// one such entry among valid ones is refused as a whole: an empty entry is a
// configuration error (typically an unset environment variable) and is
// reported, not skipped.
//
// It is a configuration error, not a verdict on the delivery, so it does not
// wrap ErrInvalid. Refuse to start on it (see CheckSecrets); met while
// serving, answer 5xx, which pds retries, rather than 4xx, which it does not.
var ErrNoSecret = errors.New("webhookverify: no key material to verify with")

// ErrNoSecrets is ErrNoSecret.
//
// Deprecated: use ErrNoSecret, which also covers empty secrets.
var ErrNoSecrets = ErrNoSecret

// CheckSecrets reports whether secrets can be verified with: nil, or an
// error wrapping ErrNoSecret that says which entry holds no key material.
// Verify and VerifySignature make the same check; call it when the receiver
// starts, to fail fast on a missing secret.
func CheckSecrets(secrets []string) error {
	if len(secrets) == 0 {
		return fmt.Errorf("%w: the list of secrets is empty", ErrNoSecret)
	}
	for i, s := range secrets {
		if strings.TrimSpace(strings.TrimPrefix(s, SecretPrefix)) == "" {
			return fmt.Errorf("%w: secret %d of %d is empty or the %q prefix alone", ErrNoSecret, i+1, len(secrets), SecretPrefix)
		}
	}
	return nil
}

// Options adjusts verification; the zero value is the default.
type Options struct {
	// Tolerance is the largest accepted distance between the signing time
	// and now; zero means DefaultTolerance.
	Tolerance time.Duration
}

// Verify checks a delivery's headers and raw body against one or more
// secrets (several while a secret rotation is under way: any one matching is
// enough). now is the receiver's current time. Secrets without key material
// are refused with ErrNoSecret whatever the delivery (see CheckSecrets).
func Verify(h http.Header, body []byte, secrets []string, now time.Time, opts Options) error {
	if err := CheckSecrets(secrets); err != nil {
		return err
	}
	sig := h.Get(HeaderSignature)
	if sig == "" {
		return ErrMissingHeader
	}
	if ts := h.Get(HeaderTimestamp); ts != "" {
		t, _, err := parseHeader(sig)
		if err != nil {
			return err
		}
		if ts != strconv.FormatInt(t, 10) {
			return ErrTimestampHeaders
		}
	}
	return VerifySignature(sig, body, secrets, now, opts)
}

// VerifySignature checks one Service-Signature value against the raw body.
// Like Verify, it refuses secrets without key material with ErrNoSecret.
func VerifySignature(signature string, body []byte, secrets []string, now time.Time, opts Options) error {
	if err := CheckSecrets(secrets); err != nil {
		return err
	}
	t, sigs, err := parseHeader(signature)
	if err != nil {
		return err
	}
	tol := opts.Tolerance
	if tol <= 0 {
		tol = DefaultTolerance
	}
	// Compare in seconds: converting a hostile t to a time.Time could overflow.
	if diff := now.Unix() - t; diff > int64(tol/time.Second) || diff < -int64(tol/time.Second) {
		return ErrTimestamp
	}
	for _, secret := range secrets {
		want := mac(secret, t, body)
		for _, got := range sigs {
			if hmac.Equal(got, want) {
				return nil
			}
		}
	}
	return ErrNoMatch
}

// Sign returns the Service-Signature value for body signed at t, as pds
// sends it; useful to test a receiver. It does not check the secret (it has
// no error to return); Verify and VerifySignature refuse to verify with a
// secret that holds no key material.
func Sign(secret string, t time.Time, body []byte) string {
	return fmt.Sprintf("t=%d,v1=%s", t.Unix(), hex.EncodeToString(mac(secret, t.Unix(), body)))
}

// mac is the HMAC-SHA256 of "<t>.<body>" keyed with the secret.
func mac(secret string, t int64, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(strconv.FormatInt(t, 10)))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// parseHeader reads "t=<unix>,v1=<hex>[,v1=<hex>...]". Elements of other
// schemes are skipped so that a later scheme can be added beside v1; any
// element that is not key=value, a second t, a t that is not a decimal
// integer, or a v1 that is not 32 bytes of hex makes the header malformed.
func parseHeader(h string) (int64, [][]byte, error) {
	if len(h) > maxHeaderLength {
		return 0, nil, ErrMalformedHeader
	}
	var (
		t     int64
		haveT bool
		sigs  [][]byte
	)
	for _, part := range strings.Split(h, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || k == "" || v == "" {
			return 0, nil, ErrMalformedHeader
		}
		switch k {
		case "t":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || haveT || n < 0 {
				return 0, nil, ErrMalformedHeader
			}
			t, haveT = n, true
		case "v1":
			b, err := hex.DecodeString(v)
			if err != nil || len(b) != sha256.Size {
				return 0, nil, ErrMalformedHeader
			}
			sigs = append(sigs, b)
		}
	}
	if !haveT || len(sigs) == 0 {
		return 0, nil, ErrMalformedHeader
	}
	return t, sigs, nil
}
