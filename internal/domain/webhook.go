package domain

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"
)

// WebhookEvents lists every event a subscription may name (spec section 6).
var WebhookEvents = []string{EventPersonCreated, EventPersonUpdated, EventPersonDeleted, EventPersonMerged, EventWebhookDisabled}

// EventWebhookDisabled is told to the account's other subscriptions that
// list it when pds deactivates a subscription (a failure streak or a 410,
// never its owner's switch-off). Its data describes that subscription, never
// a person, so its delivery has no person (Delivery.PersonID is "").
const EventWebhookDisabled = "webhook.disabled"

// Why a subscription is inactive (decisions.md section 10, plus "manual"
// for a PATCH {"is_active": false}).
const (
	DisabledFailures = "failures"
	DisabledGone     = "gone"
	DisabledManual   = "manual"
)

// Signature schemes a subscription's deliveries are signed by.
const (
	// SchemePDS: the spec's Service-* headers alone (section 6.2 and 6.3).
	SchemePDS = "pds"
	// SchemeStandardWebhooks adds the webhook-id, webhook-timestamp and
	// webhook-signature headers of the Standard Webhooks specification.
	SchemeStandardWebhooks = "standard-webhooks"
)

// SignatureSchemes lists every signature scheme, the default first.
var SignatureSchemes = []string{SchemePDS, SchemeStandardWebhooks}

// Delivery statuses.
const (
	DeliveryPending   = "pending"
	DeliverySucceeded = "succeeded"
	DeliveryFailed    = "failed"
)

// DeliveryStatuses lists every delivery status.
var DeliveryStatuses = []string{DeliveryPending, DeliverySucceeded, DeliveryFailed}

// Webhook is a subscription: where to send which events, signed with which
// secret. Secret is the full current secret; it leaves the service only in
// the responses that create or rotate it.
type Webhook struct {
	ID             string
	AccountID      string
	Name           string
	TargetURL      string
	Events         []string
	IsActive       bool
	DisabledReason *string
	LastError      *string
	Secret         string
	SecretVersion  int
	// SignatureScheme is one of SignatureSchemes.
	SignatureScheme string
	// Previous is the secret the last rotation retired and until when it
	// still signs alongside Secret under Standard Webhooks; nil before any
	// rotation.
	Previous *RetiredSecret
	// The failure streak: failed deliveries with no 2xx between them.
	StreakStartedAt *time.Time
	StreakFailures  int
	CreatedAt       time.Time
	UpdatedAt       time.Time
	// LocalListener marks the subscription of a `pds webhooks listen`
	// receiver on ListenerHost's loopback: its deliveries go through a
	// client that reaches loopback and nothing else, attempted only by an
	// instance on that host. Set only by that command, never through the
	// API; a target_url changed through the API ends it.
	LocalListener bool
	ListenerHost  string
	// Headers are sent on every attempt, beside the signed ones; the
	// values may be credentials, stored as the secret is and shown only
	// as hints. Nil or empty: none.
	Headers map[string]string
	// MaxPerSecond bounds the attempts all instances together start for
	// this subscription in one wall-clock second; 0 is no bound.
	MaxPerSecond int
	// IncludeChanges adds the top-level changes member to its bodies.
	IncludeChanges bool
}

// RetiredSecret is a rotation's previous secret and the end of the overlap
// in which it signs alongside the new one.
type RetiredSecret struct {
	Secret string
	Until  time.Time
}

// Wants tells whether the subscription receives a delivery of a burst
// resolved to event (spec section 6.1 rules 5 to 7): only when event is
// listed in its events, exactly; there is no hierarchy and no fallback from
// one event to the other. Whether the subscription is active is the
// caller's filter.
func (w Webhook) Wants(event string) bool { return slices.Contains(w.Events, event) }

// WebhookUpdate is a validated PATCH: nil fields stay unchanged.
type WebhookUpdate struct {
	Name            *string
	TargetURL       *string
	Events          []string
	IsActive        *bool
	SignatureScheme *string
	// Headers replaces the whole set when non-nil; an empty map removes them.
	Headers map[string]string
	// MaxPerSecond: 0 removes the bound.
	MaxPerSecond   *int
	IncludeChanges *bool
}

// Burst is an open run of changes to one person (the outbox row), as a
// worker holds it between claiming and closing it.
type Burst struct {
	PersonID   string
	AccountID  string
	Event      string
	DueAt      time.Time
	LeaseToken string
}

// Delivery is one logical delivery of one event to one subscription; every
// attempt sends the same id and body.
type Delivery struct {
	ID             string
	AccountID      string
	WebhookID      string
	Event          string
	PersonID       string // "" for an event about no person (webhook.disabled)
	Body           json.RawMessage
	SecretVersion  int
	Status         string
	Attempts       int
	RoundStart     int // attempts made before the current round of the retry schedule
	LastStatusCode *int
	LastError      *string
	NextAttemptAt  *time.Time
	LeaseUntil     *time.Time
	CreatedAt      time.Time
}

// RoundAttempts is how many attempts the current round of the retry schedule has made.
func (d *Delivery) RoundAttempts() int { return d.Attempts - d.RoundStart }

// DeliveryFilter narrows a subscription's delivery log; every member set
// must hold, and an empty one holds for every delivery.
type DeliveryFilter struct {
	Status   string // one of DeliveryStatuses
	Event    string // one of WebhookEvents
	PersonID string
	// Since and Until bound the delivery's creation time, both inclusive.
	Since, Until *time.Time
}

// DeliveryAttempt is one POST of a delivery and what came back.
type DeliveryAttempt struct {
	Attempt     int
	AttemptedAt time.Time
	StatusCode  *int // nil when no response arrived
	Error       *string
	DurationMS  int64
	// RequestHeaders are the headers the worker set on the request, each
	// name's values joined by ", ", the signatures as RedactSignatures
	// keeps them; empty for attempts recorded before they were kept.
	RequestHeaders map[string]string
}

// Redacted stands in the record of an attempt for a signature's value.
const Redacted = "…redacted"

// RedactSignatures returns the headers of an attempt as the delivery log
// keeps them: each signature with its time and scheme, which say when and
// how the attempt was signed, but without its value. Anyone who read a
// value (from the log, the database or a backup) could send the receiver
// the delivery again within its timestamp tolerance, as if pds had.
// Service-Signature "t=1795259056,v1=5257…" is kept as
// "t=1795259056,v1=…redacted"; webhook-signature "v1,K5oZ… v1,3TmR…" (one
// per secret that signs) as "v1,…redacted v1,…redacted". A value of
// another shape is dropped whole. Redacting a redacted record changes
// nothing.
func RedactSignatures(headers map[string]string) map[string]string {
	var out map[string]string
	for name, value := range headers {
		var kept string
		switch {
		case strings.EqualFold(name, "Service-Signature"):
			kept = redactEach(value, ",", "=", "t")
		case strings.EqualFold(name, "Webhook-Signature"):
			kept = redactEach(value, " ", ",", "")
		default:
			continue
		}
		if kept != value {
			if out == nil {
				out = maps.Clone(headers)
			}
			out[name] = kept
		}
	}
	if out == nil {
		return headers
	}
	return out
}

// redactEach redacts the value of every item of a list (items separated
// by sep, each a name and a value separated by pair) but an item named
// keep; an item without a name is redacted whole.
func redactEach(list, sep, pair, keep string) string {
	items := strings.Split(list, sep)
	for i, item := range items {
		name, _, ok := strings.Cut(item, pair)
		switch {
		case !ok || name == "":
			items[i] = Redacted
		case name != keep:
			items[i] = name + pair + Redacted
		}
	}
	return strings.Join(items, sep)
}

// Attempt outcomes, as AttemptCount counts them.
const (
	AttemptSucceeded = "succeeded" // answered with a 2xx
	AttemptFailed    = "failed"    // answered with any other status
	AttemptError     = "error"     // no answer: a timeout, a connection that failed
)

// Outcome says what the attempt got: AttemptSucceeded, AttemptFailed or
// AttemptError.
func (a DeliveryAttempt) Outcome() string {
	switch {
	case a.StatusCode == nil:
		return AttemptError
	case *a.StatusCode >= 200 && *a.StatusCode < 300:
		return AttemptSucceeded
	}
	return AttemptFailed
}

// AttemptCount is how many attempts of one subscription in one hour got
// each outcome.
type AttemptCount struct {
	WebhookID                 string
	Hour                      time.Time // UTC, truncated to the hour
	Succeeded, Failed, Errors int
}

// DeliveryJob is a claimed delivery with what an attempt needs: where to
// send it, the secret its version names and, for the Standard Webhooks
// scheme, the subscription's current and previous secrets.
type DeliveryJob struct {
	Delivery
	TargetURL       string
	Secret          string
	SignatureScheme string
	CurrentSecret   string
	Previous        *RetiredSecret
	LeaseToken      string
	// LocalListener: the subscription is a local listener's (see Webhook),
	// on ListenerHost.
	LocalListener bool
	ListenerHost  string
	// Headers and MaxPerSecond are the subscription's, as it stands.
	Headers      map[string]string
	MaxPerSecond int
}

// PendingRound summarises pending deliveries that share a position in the
// retry schedule: how many attempts their round has made and the latest
// next attempt among them.
type PendingRound struct {
	RoundAttempts int
	NextAttemptAt time.Time
}

// WebhookDisabledData is the data of a webhook.disabled delivery: the
// subscription pds deactivated, never a person.
type WebhookDisabledData struct {
	ID           string  `json:"id"`
	Name         string  `json:"name"`
	TargetURL    string  `json:"target_url"`
	LastError    *string `json:"last_error"`
	DateDisabled Time    `json:"date_disabled"`
}

// Body is the delivery body of a webhook.disabled delivery.
func (d WebhookDisabledData) Body(deliveryID string, created time.Time) json.RawMessage {
	data, _ := json.Marshal(d) // strings and a time always marshal
	body, _ := json.Marshal(Envelope{ID: deliveryID, Event: EventWebhookDisabled, Created: T(created), Data: data})
	return body
}
