package webhook

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
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

// envelope is the delivery body of spec section 2.9.
type envelope struct {
	ID      string          `json:"id"`
	Event   string          `json:"event"`
	Created domain.Time     `json:"created"`
	Data    json.RawMessage `json:"data"`
}

// Body renders the delivery body once; every attempt sends it unchanged.
func Body(id, event string, created time.Time, data json.RawMessage) (json.RawMessage, error) {
	return json.Marshal(envelope{ID: id, Event: event, Created: domain.T(created), Data: data})
}

// NewDeliveryID is a fresh 32-hex delivery id.
func NewDeliveryID() string { return domain.RandomHex(16) }

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
