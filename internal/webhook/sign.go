package webhook

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/pkg/webhookverify"
)

// secretPrefix starts every signing secret; the HMAC key is the whole
// string, prefix included.
const secretPrefix = "whsec_"

// NewSecret returns a fresh signing secret: the prefix and 33 random bytes
// in base64 (44 characters, no padding).
func NewSecret() string {
	b := make([]byte, 33)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return secretPrefix + base64.StdEncoding.EncodeToString(b)
}

// Hint shows a secret without revealing it: "whsec_...Ab3x".
func Hint(secret string) string {
	if len(secret) < len(secretPrefix)+8 {
		return secretPrefix + "..."
	}
	return secretPrefix + "..." + secret[len(secret)-4:]
}

// Body renders the delivery body once; every attempt sends it unchanged.
//
// It writes the envelope itself around data, as json.Marshal of a
// domain.Envelope would, without re-reading data: the encoder compacts and
// re-validates a RawMessage byte by byte, which was most of the cost of
// making a delivery, paid inside the transaction that closes its burst.
// data must be a JSON encoding (the renderer's json.Marshal, compact and
// HTML-escaped as the encoder writes it), which goes into the body as it
// is.
func Body(id, event string, created time.Time, data json.RawMessage) (json.RawMessage, error) {
	if len(data) == 0 {
		data = json.RawMessage("null")
	}
	if !plainJSONString(id) || !plainJSONString(event) {
		return json.Marshal(domain.Envelope{ID: id, Event: event, Created: domain.T(created), Data: data})
	}
	b := make([]byte, 0, len(data)+len(id)+len(event)+len(domain.TimeLayout)+64)
	b = append(append(append(b, `{"id":"`...), id...), `","event":"`...)
	b = append(append(b, event...), `","created":"`...)
	b = domain.AppendTime(b, created)
	b = append(append(append(b, `","data":`...), data...), '}')
	return b, nil
}

// plainJSONString reports whether s is written in JSON as it is, between
// quotes: printable ASCII that JSON (with the encoder's HTML escaping) does
// not escape. Delivery ids (hex) and event names always are.
func plainJSONString(s string) bool {
	for i := range len(s) {
		switch c := s[i]; {
		case c < 0x20 || c >= 0x7f, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// NewDeliveryID is a fresh 32-hex delivery id (domain.NewDeliveryID).
func NewDeliveryID() string { return domain.NewDeliveryID() }

// SetHeaders puts the headers of spec section 6.2 on an attempt, signed at
// the attempt's own time.
func SetHeaders(h http.Header, d domain.Delivery, secret string, at time.Time) {
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "pds-webhooks/0.0.0")
	h.Set(webhookverify.HeaderWebhookID, d.WebhookID)
	h.Set(webhookverify.HeaderDeliveryID, d.ID)
	h.Set(webhookverify.HeaderEvent, d.Event)
	h.Set(webhookverify.HeaderTimestamp, strconv.FormatInt(at.Unix(), 10))
	h.Set(webhookverify.HeaderSignature, webhookverify.Sign(secret, at, d.Body))
}

// SetStandardHeaders adds the headers of the Standard Webhooks scheme to an
// attempt: webhook-id is the delivery id, the same on every retry, and
// webhook-timestamp the attempt's own time, as Service-Timestamp.
func SetStandardHeaders(h http.Header, d domain.Delivery, secrets []string, at time.Time) error {
	sig, err := webhookverify.SignStandard(secrets, d.ID, at, d.Body)
	if err != nil {
		return err
	}
	h.Set(webhookverify.HeaderStandardID, d.ID)
	h.Set(webhookverify.HeaderStandardTimestamp, strconv.FormatInt(at.Unix(), 10))
	h.Set(webhookverify.HeaderStandardSignature, sig)
	return nil
}

// StandardSecrets are the secrets that sign a job at time at under the
// Standard Webhooks scheme, each once: the subscription's current secret,
// the one the delivery's version names (a delivery made before a rotation
// keeps it, spec section 4, webhook rule 3) and, until the overlap a
// rotation opened ends, the previous one.
func StandardSecrets(job domain.DeliveryJob, at time.Time) []string {
	var out []string
	add := func(s string) {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	add(job.CurrentSecret)
	add(job.Secret)
	if job.Previous != nil && at.Before(job.Previous.Until) {
		add(job.Previous.Secret)
	}
	return out
}

// setAttemptHeaders signs an attempt as the job's subscription chose: the
// spec's headers always, the Standard Webhooks ones as well when chosen.
func setAttemptHeaders(h http.Header, job domain.DeliveryJob, at time.Time) error {
	SetHeaders(h, job.Delivery, job.Secret, at)
	if job.SignatureScheme != domain.SchemeStandardWebhooks {
		return nil
	}
	return SetStandardHeaders(h, job.Delivery, StandardSecrets(job, at), at)
}
