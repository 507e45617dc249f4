// Package webhookverify checks the signature of a pds webhook delivery, for
// receivers written in Go, in either of the two schemes a subscription can
// choose (its signature_scheme).
//
// The pds scheme (the default; spec section 6) signs with the headers
//
//	Service-Timestamp: 1795258530
//	Service-Signature: t=1795258530,v1=<64 hex digits>
//
// where v1 is the hex HMAC-SHA256, keyed with the subscription's full
// signing secret (the whole "whsec_..." string), of the timestamp, a dot
// and the raw request body.
//
// The Standard Webhooks scheme (signature_scheme "standard-webhooks") adds
// the headers of that specification to the Service-* ones, which still go
// along, signed the pds way:
//
//	webhook-id: 5f0c2a3e9b8d4c1fa7e6d5c4b3a29180
//	webhook-timestamp: 1795258530
//	webhook-signature: v1,<base64 of 32 bytes>
//
// where v1 is the base64 HMAC-SHA256, keyed with the base64-decoded part of
// the secret after "whsec_", of the id, a dot, the timestamp, a dot and the
// raw body; webhook-id is the delivery id, the same on every retry. During a
// secret rotation's overlap, webhook-signature carries one v1 per secret,
// separated by a space. The official Standard Webhooks libraries verify
// these deliveries as they are.
//
// Verify reads the headers to choose the scheme: a delivery that carries any
// of webhook-id, webhook-timestamp or webhook-signature (with a non-empty
// value) is verified as a Standard Webhooks delivery, by those three headers
// alone, and its Service-* headers are not read; any other delivery is
// verified the pds way. So a delivery carrying both sets, as pds sends them
// under the Standard scheme, is verified by webhook-signature. VerifyStandard
// and VerifySignature verify one scheme only.
//
// Verify the raw body exactly as received, before any JSON parsing. A failed
// verification is an error value, never a panic; answer it with a 4xx,
// which pds does not retry. Both schemes fail with the same errors
// (ErrMissingHeader, ErrMalformedHeader, ErrTimestamp, ErrNoMatch), and the
// same tolerance, DefaultTolerance unless Options say otherwise.
//
// Verification needs key material: every entry point refuses, with
// ErrNoSecret, to verify with an empty list of secrets or with a secret that
// holds none (see CheckSecrets: an unset environment variable, say, or a
// secret of zero bytes, which as an HMAC key is the empty key), since a
// delivery signed with such a key proves nothing. A Standard Webhooks
// delivery also needs every secret to be "whsec_" and base64 (see
// CheckStandardSecrets). Call CheckSecrets, or CheckStandardSecrets, when
// the receiver starts, and refuse to start, rather than discover this at the
// first delivery.
package webhookverify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Header names of a delivery, in the pds scheme (spec section 6.2); pds
// sends them under either scheme.
const (
	HeaderSignature  = "Service-Signature"
	HeaderTimestamp  = "Service-Timestamp"
	HeaderDeliveryID = "Service-Delivery-Id"
	HeaderEvent      = "Service-Event"
	HeaderWebhookID  = "Service-Webhook-Id"
)

// Header names of the Standard Webhooks scheme, as that specification
// spells them (HTTP header names are read in any case).
const (
	// HeaderStandardID is the delivery id (Service-Delivery-Id), the same on
	// every retry: the idempotency key.
	HeaderStandardID = "webhook-id"
	// HeaderStandardTimestamp is the signing time, in unix seconds.
	HeaderStandardTimestamp = "webhook-timestamp"
	// HeaderStandardSignature is one "v1,<base64>" per signing secret,
	// separated by a space.
	HeaderStandardSignature = "webhook-signature"
)

// DefaultTolerance is how far the signing time may be from now, in either
// direction, before a delivery is refused as a possible replay.
const DefaultTolerance = 300 * time.Second

// SecretPrefix starts every signing secret pds issues; the key material
// follows it.
const SecretPrefix = "whsec_"

// maxHeaderLength bounds the work spent on a hostile header.
const maxHeaderLength = 4096

// The ways a delivery fails to verify, in either scheme. Each wraps
// ErrInvalid; the error returned may wrap one of them with the name of the
// header at fault.
var (
	ErrInvalid          = errors.New("webhookverify: the delivery is not authentic")
	ErrMissingHeader    = fmt.Errorf("%w: a header the signature needs is missing", ErrInvalid)
	ErrMalformedHeader  = fmt.Errorf("%w: a header the signature needs is malformed", ErrInvalid)
	ErrTimestamp        = fmt.Errorf("%w: the signing time is outside the tolerance", ErrInvalid)
	ErrNoMatch          = fmt.Errorf("%w: no signature matches the body under any of the secrets", ErrInvalid)
	ErrTimestampHeaders = fmt.Errorf("%w: %s differs from t in %s", ErrInvalid, HeaderTimestamp, HeaderSignature)
)

// ErrNoSecret is returned, before the delivery's signature is looked at,
// when the secrets hold no key material: the list is empty, or any one of
// them holds none (see CheckSecrets), or, for a Standard Webhooks delivery,
// is not a Standard Webhooks secret (see CheckStandardSecrets). A list with
// one such entry among valid ones is refused as a whole: such an entry is a
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

// base64Text is standard base64 (RFC 4648 section 4, the alphabet with + and
// /) with its padding, and nothing else: no white space, no line breaks.
var base64Text = regexp.MustCompile(`^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$`)

// base64Signature is the padded base64 of 32 bytes.
var base64Signature = regexp.MustCompile(`^[A-Za-z0-9+/]{43}=$`)

// decodeBase64 decodes s if it is base64Text.
func decodeBase64(s string) ([]byte, bool) {
	if !base64Text.MatchString(s) {
		return nil, false
	}
	b, err := base64.StdEncoding.DecodeString(s)
	return b, err == nil
}

// onlyZeros reports whether b has no byte other than zero (an empty b too):
// as an HMAC key, such a b is the empty key.
func onlyZeros(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// hasKeyMaterial is the rule of CheckSecrets, for both schemes.
func hasKeyMaterial(secret string) bool {
	m := strings.TrimSpace(strings.TrimPrefix(secret, SecretPrefix))
	if onlyZeros([]byte(m)) {
		return false
	}
	if b, ok := decodeBase64(m); ok && onlyZeros(b) {
		return false
	}
	return true
}

// standardKey is the HMAC key of the Standard Webhooks scheme: the base64
// decoding of the secret after its prefix; ok is false when that is not
// base64 or holds zero bytes only.
func standardKey(secret string) (key []byte, ok bool) {
	key, ok = decodeBase64(strings.TrimPrefix(secret, SecretPrefix))
	if !ok || onlyZeros(key) {
		return nil, false
	}
	return key, true
}

// CheckSecrets reports whether secrets can be verified with: nil, or an
// error wrapping ErrNoSecret that says which entry holds no key material.
// Every entry point makes the same check; call it when the receiver starts,
// to fail fast on a missing secret.
//
// A secret's key material, for this check and in both schemes, is its text
// after the "whsec_" prefix (the whole text if it has none), white space
// trimmed from both ends. A secret holds none when that text is empty, is
// made of zero bytes ("\x00") only, or is base64 (standard alphabet, padded)
// of zero bytes only, such as "whsec_AAAA": each of these is, as an HMAC key
// of the scheme that would use it, the empty key or a key chosen by nobody.
// (The pds scheme's HMAC key is still the whole secret, prefix included.)
func CheckSecrets(secrets []string) error {
	if len(secrets) == 0 {
		return fmt.Errorf("%w: the list of secrets is empty", ErrNoSecret)
	}
	for i, s := range secrets {
		if !hasKeyMaterial(s) {
			return fmt.Errorf("%w: secret %d of %d is empty, the %q prefix alone, or zero bytes only", ErrNoSecret, i+1, len(secrets), SecretPrefix)
		}
	}
	return nil
}

// CheckStandardSecrets is CheckSecrets for a receiver of Standard Webhooks
// deliveries: each secret must also be a Standard Webhooks secret, "whsec_"
// (or nothing) and then exactly the standard base64, padded, of the key,
// with no white space; that key, its decoding, must not be zero bytes only.
// Every secret pds issues is one. Verify and VerifyStandard refuse a
// Standard delivery, with ErrNoSecret, under secrets that fail this check.
func CheckStandardSecrets(secrets []string) error {
	_, err := standardKeys(secrets)
	return err
}

// standardKeys checks secrets as CheckStandardSecrets does and returns
// their keys, each decoded once.
func standardKeys(secrets []string) ([][]byte, error) {
	if err := CheckSecrets(secrets); err != nil {
		return nil, err
	}
	keys := make([][]byte, len(secrets))
	for i, s := range secrets {
		key, ok := standardKey(s)
		if !ok {
			return nil, fmt.Errorf("%w: secret %d of %d is not %q and the base64 of a key, as a Standard Webhooks secret is", ErrNoSecret, i+1, len(secrets), SecretPrefix)
		}
		keys[i] = key
	}
	return keys, nil
}

// Options adjusts verification; the zero value is the default.
type Options struct {
	// Tolerance is the largest accepted distance between the signing time
	// and now; zero means DefaultTolerance.
	Tolerance time.Duration
}

// withinTolerance compares in seconds: converting a hostile t to a
// time.Time could overflow.
func withinTolerance(t int64, now time.Time, opts Options) bool {
	tol := opts.Tolerance
	if tol <= 0 {
		tol = DefaultTolerance
	}
	diff := now.Unix() - t
	return diff <= int64(tol/time.Second) && diff >= -int64(tol/time.Second)
}

// IsStandard reports whether Verify reads h as a Standard Webhooks delivery:
// whether it carries webhook-id, webhook-timestamp or webhook-signature with
// a non-empty (first) value.
func IsStandard(h http.Header) bool {
	return h.Get(HeaderStandardID) != "" || h.Get(HeaderStandardTimestamp) != "" || h.Get(HeaderStandardSignature) != ""
}

// Verify checks a delivery's headers and raw body against one or more
// secrets (several while a secret rotation is under way: any one matching is
// enough), in the scheme its headers show (see IsStandard): a delivery that
// carries any Standard Webhooks header is verified by those headers as
// VerifyStandard does, and its Service-* headers are not read; any other is
// verified the pds way. now is the receiver's current time. Secrets without
// key material are refused with ErrNoSecret whatever the delivery (see
// CheckSecrets).
func Verify(h http.Header, body []byte, secrets []string, now time.Time, opts Options) error {
	if err := CheckSecrets(secrets); err != nil {
		return err
	}
	if IsStandard(h) {
		return VerifyStandard(h, body, secrets, now, opts)
	}
	sig := h.Get(HeaderSignature)
	if sig == "" {
		return fmt.Errorf("%w: %s", ErrMissingHeader, HeaderSignature)
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

// VerifySignature checks one Service-Signature value (the pds scheme)
// against the raw body. Like Verify, it refuses secrets without key material
// with ErrNoSecret.
func VerifySignature(signature string, body []byte, secrets []string, now time.Time, opts Options) error {
	if err := CheckSecrets(secrets); err != nil {
		return err
	}
	t, sigs, err := parseHeader(signature)
	if err != nil {
		return err
	}
	if !withinTolerance(t, now, opts) {
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

// VerifyStandard checks a Standard Webhooks delivery: its webhook-id,
// webhook-timestamp and webhook-signature headers, and nothing else, against
// the raw body, under one or more secrets. It refuses, with ErrNoSecret,
// secrets that fail CheckStandardSecrets. Then, in this order:
//
//   - ErrMissingHeader: one of the three headers is missing or empty (a
//     delivery signed the pds way only is missing all three);
//   - ErrMalformedHeader: one of them is longer than 4096 bytes; webhook-id
//     holds anything other than visible ASCII characters (! to ~);
//     webhook-timestamp is not a decimal integer in canonical form (digits
//     only, no sign, no leading zero) below 2^63; or webhook-signature is
//     not a list of elements "<version>,<value>", each version and value
//     non-empty, separated by single spaces, in which every v1 value is the
//     padded base64 of 32 bytes (44 characters) and at least one v1 is found
//     (elements of other versions, such as v1a, are skipped);
//   - ErrTimestamp: the timestamp is outside the tolerance;
//   - ErrNoMatch: no v1 is the signature of the delivery under any secret.
//
// A v1 matches when it is exactly the base64 text of the signature, compared
// in constant time, as the official libraries compare it.
func VerifyStandard(h http.Header, body []byte, secrets []string, now time.Time, opts Options) error {
	keys, err := standardKeys(secrets)
	if err != nil {
		return err
	}
	id, ts, sig := h.Get(HeaderStandardID), h.Get(HeaderStandardTimestamp), h.Get(HeaderStandardSignature)
	for _, header := range []struct{ name, value string }{
		{HeaderStandardID, id}, {HeaderStandardTimestamp, ts}, {HeaderStandardSignature, sig},
	} {
		if header.value == "" {
			return fmt.Errorf("%w: %s", ErrMissingHeader, header.name)
		}
	}
	if !validStandardID(id) {
		return fmt.Errorf("%w: %s", ErrMalformedHeader, HeaderStandardID)
	}
	t, ok := parseStandardTimestamp(ts)
	if !ok {
		return fmt.Errorf("%w: %s", ErrMalformedHeader, HeaderStandardTimestamp)
	}
	sigs, ok := parseStandardSignature(sig)
	if !ok {
		return fmt.Errorf("%w: %s", ErrMalformedHeader, HeaderStandardSignature)
	}
	if !withinTolerance(t, now, opts) {
		return ErrTimestamp
	}
	for _, key := range keys {
		want := []byte(base64.StdEncoding.EncodeToString(standardMAC(key, id, t, body)))
		for _, got := range sigs {
			if hmac.Equal([]byte(got), want) {
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

// SignStandard returns the webhook-signature value for a Standard Webhooks
// delivery of body with the given id, signed at t: one "v1,<base64>" per
// secret, in the order given, separated by a space (several while a secret
// rotation is under way). The error wraps ErrNoSecret when the list is empty
// or a secret fails CheckStandardSecrets; another error says that id is not
// what VerifyStandard accepts (1 to 4096 visible ASCII characters).
func SignStandard(secrets []string, id string, t time.Time, body []byte) (string, error) {
	keys, err := standardKeys(secrets)
	if err != nil {
		return "", err
	}
	if !validStandardID(id) {
		return "", fmt.Errorf("webhookverify: the id %q is not 1 to %d visible ASCII characters", id, maxHeaderLength)
	}
	sigs := make([]string, len(keys))
	for i, key := range keys {
		sigs[i] = "v1," + base64.StdEncoding.EncodeToString(standardMAC(key, id, t.Unix(), body))
	}
	return strings.Join(sigs, " "), nil
}

// mac is the HMAC-SHA256 of "<t>.<body>" keyed with the secret.
func mac(secret string, t int64, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(strconv.FormatInt(t, 10)))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// standardMAC is the HMAC-SHA256 of "<id>.<t>.<body>" keyed with key.
func standardMAC(key []byte, id string, t int64, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(strconv.FormatInt(t, 10)))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// validStandardID: 1 to maxHeaderLength visible ASCII characters, so that
// every language reads the same bytes from the header.
func validStandardID(id string) bool {
	if id == "" || len(id) > maxHeaderLength {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < '!' || id[i] > '~' {
			return false
		}
	}
	return true
}

// parseStandardTimestamp reads a canonical non-negative decimal int64.
func parseStandardTimestamp(ts string) (int64, bool) {
	if ts == "" || len(ts) > 19 || (ts[0] == '0' && ts != "0") {
		return 0, false
	}
	for i := 0; i < len(ts); i++ {
		if ts[i] < '0' || ts[i] > '9' {
			return 0, false
		}
	}
	t, err := strconv.ParseInt(ts, 10, 64)
	return t, err == nil
}

// parseStandardSignature reads "<version>,<value>[ <version>,<value>...]"
// and returns the v1 values (see VerifyStandard).
func parseStandardSignature(h string) ([]string, bool) {
	if len(h) > maxHeaderLength {
		return nil, false
	}
	var sigs []string
	for _, element := range strings.Split(h, " ") {
		version, value, ok := strings.Cut(element, ",")
		if !ok || version == "" || value == "" {
			return nil, false
		}
		if version != "v1" {
			continue
		}
		if !base64Signature.MatchString(value) {
			return nil, false
		}
		sigs = append(sigs, value)
	}
	return sigs, len(sigs) > 0
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
