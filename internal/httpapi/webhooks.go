package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/params"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/webhook"
)

type webhookView struct {
	ID             string   `json:"id"`
	Name           string   `json:"name"`
	TargetURL      string   `json:"target_url"`
	Events         []string `json:"events"`
	IsActive       bool     `json:"is_active"`
	DisabledReason *string  `json:"disabled_reason"`
	LastError      *string  `json:"last_error"`
	SecretHint     string   `json:"secret_hint"`
	// SignatureScheme: "pds" or "standard-webhooks".
	SignatureScheme string `json:"signature_scheme"`
	// Headers: each name with a hint of its value (webhook.HeaderHints).
	Headers        map[string]string `json:"headers"`
	MaxPerSecond   int               `json:"max_per_second"`
	IncludeChanges bool              `json:"include_changes"`
	DateCreated    domain.Time       `json:"date_created"`
}

func viewWebhook(w *domain.Webhook) webhookView {
	return webhookView{
		ID: w.ID, Name: w.Name, TargetURL: w.TargetURL, Events: w.Events, IsActive: w.IsActive,
		DisabledReason: w.DisabledReason, LastError: w.LastError, SecretHint: webhook.Hint(w.Secret),
		SignatureScheme: w.SignatureScheme, Headers: webhook.HeaderHints(w.Headers), MaxPerSecond: w.MaxPerSecond,
		IncludeChanges: w.IncludeChanges, DateCreated: domain.T(w.CreatedAt),
	}
}

// webhookWithSecret is the creating response: the only read of the full secret.
type webhookWithSecret struct {
	webhookView
	Secret string `json:"secret"`
}

type rotateView struct {
	webhookView
	Secret                  string      `json:"secret"`
	PreviousSecretExpiresAt domain.Time `json:"previous_secret_expires_at"`
}

type deliveryView struct {
	ID             string       `json:"id"`
	Event          string       `json:"event"`
	PersonID       *string      `json:"person_id"` // null for an event about no person (webhook.disabled)
	Status         string       `json:"status"`
	Attempts       int          `json:"attempts"`
	LastStatusCode *int         `json:"last_status_code"`
	LastError      *string      `json:"last_error"`
	NextAttemptAt  *domain.Time `json:"next_attempt_at"`
	Created        domain.Time  `json:"created"`
}

func viewDelivery(d *domain.Delivery) deliveryView {
	v := deliveryView{
		ID: d.ID, Event: d.Event, Status: d.Status, Attempts: d.Attempts,
		LastStatusCode: d.LastStatusCode, LastError: d.LastError, Created: domain.T(d.CreatedAt),
	}
	if d.PersonID != "" {
		v.PersonID = &d.PersonID
	}
	if d.Status == domain.DeliveryPending {
		v.NextAttemptAt = domain.TP(d.NextAttemptAt)
	}
	return v
}

type attemptView struct {
	AttemptedAt    domain.Time       `json:"attempted_at"`
	StatusCode     *int              `json:"status_code"`
	Error          *string           `json:"error"`
	DurationMS     int64             `json:"duration_ms"`
	RequestHeaders map[string]string `json:"request_headers"`
}

type deliveryDetail struct {
	deliveryView
	AttemptLog []attemptView `json:"attempt_log"`
	// Body is the body as sent, for a key that may read the person it
	// holds (service.SeesDeliveryBody); absent for any other.
	Body json.RawMessage `json:"body,omitempty"`
}

type webhookCreate struct {
	Name            *string           `json:"name"`
	TargetURL       *string           `json:"target_url"`
	Events          []string          `json:"events"`
	SignatureScheme *string           `json:"signature_scheme"`
	Headers         map[string]string `json:"headers"`
	MaxPerSecond    *int              `json:"max_per_second"`
	IncludeChanges  *bool             `json:"include_changes"`
}

type webhookPatch struct {
	Name            domain.Opt[string]   `json:"name"`
	TargetURL       domain.Opt[string]   `json:"target_url"`
	Events          domain.Opt[[]string] `json:"events"`
	IsActive        domain.Opt[bool]     `json:"is_active"`
	SignatureScheme domain.Opt[string]   `json:"signature_scheme"`
	// Headers replaces the whole set; {} removes them.
	Headers domain.Opt[map[string]string] `json:"headers"`
	// MaxPerSecond: 0 removes the bound (no member of an update is null).
	MaxPerSecond   domain.Opt[int]  `json:"max_per_second"`
	IncludeChanges domain.Opt[bool] `json:"include_changes"`
}

func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request) error {
	var body webhookCreate
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	if err := service.MayDirectDeliveries(principalOf(r.Context()).key, body.Events); err != nil {
		return err
	}
	hook, err := s.cfg.Webhook.NewSubscription(r.Context(), accountID(r), domain.WebhookUpdate{
		Name: body.Name, TargetURL: body.TargetURL, Events: body.Events, SignatureScheme: body.SignatureScheme,
		Headers: body.Headers, MaxPerSecond: body.MaxPerSecond, IncludeChanges: body.IncludeChanges}, s.now())
	if err != nil {
		return err
	}
	if err := s.store.CreateWebhook(r.Context(), hook); err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, webhookWithSecret{viewWebhook(&hook), hook.Secret})
}

func (s *Server) listWebhooks(w http.ResponseWriter, r *http.Request) error {
	p, err := parsePage(r)
	if err != nil {
		return err
	}
	hooks, total, err := s.store.ListWebhooks(r.Context(), accountID(r), p)
	if err != nil {
		return err
	}
	views := make([]webhookView, len(hooks))
	for i := range hooks {
		views[i] = viewWebhook(&hooks[i])
	}
	return writeJSON(w, http.StatusOK, page(views, p, total))
}

func (s *Server) getWebhook(w http.ResponseWriter, r *http.Request) error {
	hook, err := s.store.GetWebhook(r.Context(), accountID(r), r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, viewWebhook(hook))
}

func (s *Server) updateWebhook(w http.ResponseWriter, r *http.Request) error {
	var body webhookPatch
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		null bool
	}{{"name", body.Name.Null}, {"target_url", body.TargetURL.Null}, {"events", body.Events.Null}, {"is_active", body.IsActive.Null},
		{"signature_scheme", body.SignatureScheme.Null}, {"headers", body.Headers.Null}, {"max_per_second", body.MaxPerSecond.Null},
		{"include_changes", body.IncludeChanges.Null}} {
		if f.null {
			return domain.BodyError("/"+f.name, "%s cannot be null; leave it out to keep it unchanged.", f.name)
		}
	}
	u := domain.WebhookUpdate{Name: body.Name.Ptr(), TargetURL: body.TargetURL.Ptr(), IsActive: body.IsActive.Ptr(),
		SignatureScheme: body.SignatureScheme.Ptr(), MaxPerSecond: body.MaxPerSecond.Ptr(), IncludeChanges: body.IncludeChanges.Ptr()}
	if body.Headers.Set {
		u.Headers = body.Headers.Value
		if u.Headers == nil {
			u.Headers = map[string]string{}
		}
	}
	if body.Events.Set {
		u.Events = body.Events.Value
		if u.Events == nil {
			u.Events = []string{}
		}
	}
	// Existence first: a foreign id is a 404 before any resolution work.
	hook, err := s.store.GetWebhook(r.Context(), accountID(r), r.PathValue("id"))
	if err != nil {
		return err
	}
	if err := service.MayChangeSubscription(principalOf(r.Context()).key, hook, u); err != nil {
		return err
	}
	if err := s.cfg.Webhook.CheckSubscription(r.Context(), u); err != nil {
		return err
	}
	hook, err = s.store.UpdateWebhook(r.Context(), accountID(r), r.PathValue("id"), u, s.now())
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, viewWebhook(hook))
}

func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request) error {
	if err := s.store.DeleteWebhook(r.Context(), accountID(r), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// rotateSecret takes no body: a new secret is made here and shown once.
func (s *Server) rotateSecret(w http.ResponseWriter, r *http.Request) error {
	now := s.now()
	hook, rounds, err := s.store.RotateWebhookSecret(r.Context(), accountID(r), r.PathValue("id"), webhook.NewSecret(), now, s.cfg.Webhook.OverlapUntil(now))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, rotateView{
		webhookView:             viewWebhook(hook),
		Secret:                  hook.Secret,
		PreviousSecretExpiresAt: domain.T(s.cfg.Webhook.PreviousSecretExpiry(hook, rounds, now)),
	})
}

func (s *Server) listDeliveries(w http.ResponseWriter, r *http.Request) error {
	p, err := parsePage(r)
	if err != nil {
		return err
	}
	f, err := params.DeliveryFilter(query(r))
	if err != nil {
		return err
	}
	ds, total, err := s.store.ListDeliveries(r.Context(), accountID(r), r.PathValue("id"), f, p)
	if err != nil {
		return err
	}
	views := make([]deliveryView, len(ds))
	for i := range ds {
		views[i] = viewDelivery(&ds[i])
	}
	return writeJSON(w, http.StatusOK, page(views, p, total))
}

func (s *Server) getDelivery(w http.ResponseWriter, r *http.Request) error {
	d, attempts, err := s.store.GetDelivery(r.Context(), accountID(r), r.PathValue("id"), r.PathValue("delivery_id"))
	if err != nil {
		return err
	}
	log := make([]attemptView, len(attempts))
	for i, a := range attempts {
		log[i] = attemptView{AttemptedAt: domain.T(a.AttemptedAt), StatusCode: a.StatusCode, Error: a.Error, DurationMS: a.DurationMS,
			RequestHeaders: a.RequestHeaders}
		if a.RequestHeaders == nil {
			log[i].RequestHeaders = map[string]string{}
		}
	}
	detail := deliveryDetail{deliveryView: viewDelivery(d), AttemptLog: log}
	if service.SeesDeliveryBody(principalOf(r.Context()).key) {
		detail.Body = d.Body
	}
	return writeJSON(w, http.StatusOK, detail)
}

// redeliver takes no body; the delivery keeps its id and body. Its answer
// is the delivery as the log shows it (webhooks:read), and sending it
// again where the subscription now points needs the scopes its body
// reveals.
func (s *Server) redeliver(w http.ResponseWriter, r *http.Request) error {
	key := principalOf(r.Context()).key
	if err := key.Require(domain.ScopeWebhooksRead); err != nil {
		return err
	}
	d, _, err := s.store.GetDelivery(r.Context(), accountID(r), r.PathValue("id"), r.PathValue("delivery_id"))
	if err != nil {
		return err
	}
	if err := service.MayRedeliver(key, d.Event); err != nil {
		return err
	}
	d, err = s.store.Redeliver(r.Context(), accountID(r), r.PathValue("id"), r.PathValue("delivery_id"), s.now())
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusAccepted, viewDelivery(d))
}

// redeliverFailed queues again every failed delivery of the subscription
// created at or after since, as redeliver queues one. Its answer counts
// them, a read of the log (webhooks:read), and the failed deliveries may
// be of any event the subscription ever listed, so it needs the scopes of
// every body that carries a person.
func (s *Server) redeliverFailed(w http.ResponseWriter, r *http.Request) error {
	if err := service.MayRedeliverFailed(principalOf(r.Context()).key); err != nil {
		return err
	}
	var body struct {
		Since *string `json:"since"`
	}
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	if body.Since == nil {
		return domain.BodyError("/since", "since is required: the failed deliveries created at or after it are redelivered.")
	}
	since, err := bodyTime("since", *body.Since)
	if err != nil {
		return err
	}
	n, err := s.store.RedeliverFailed(r.Context(), accountID(r), r.PathValue("id"), since, s.now())
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusAccepted, redeliveredView{n})
}

type redeliveredView struct {
	Redelivered int `json:"redelivered"`
}
