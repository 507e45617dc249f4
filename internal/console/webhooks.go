package console

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/params"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/webhook"
)

func (s *Server) webhookRoutes() {
	s.page("GET "+Prefix+"/webhooks", domain.ScopeWebhooksRead, s.webhooks)
	s.action("POST "+Prefix+"/webhooks", domain.ScopeWebhooksWrite, s.createWebhook)
	s.page("GET "+Prefix+"/webhooks/{id}", domain.ScopeWebhooksRead, s.webhook)
	s.action("POST "+Prefix+"/webhooks/{id}", domain.ScopeWebhooksWrite, s.updateWebhook)
	s.action("POST "+Prefix+"/webhooks/{id}/rotate-secret", domain.ScopeWebhooksWrite, s.rotateSecret)
	s.action("POST "+Prefix+"/webhooks/{id}/delete", domain.ScopeWebhooksWrite, s.deleteWebhook)
	s.page("GET "+Prefix+"/webhooks/{id}/deliveries/{delivery_id}", domain.ScopeWebhooksRead, s.delivery)
	s.action("POST "+Prefix+"/webhooks/{id}/deliveries/{delivery_id}/redeliver", domain.ScopeWebhooksWrite, s.redeliver)
	s.page("GET "+Prefix+"/webhooks/{id}/redeliver-failed", domain.ScopeWebhooksWrite, s.confirmRedeliverFailed)
	s.action("POST "+Prefix+"/webhooks/{id}/redeliver-failed", domain.ScopeWebhooksWrite, s.redeliverFailed)
}

// hours is the span of the attempts chart.
const hours = 24

// subscriptionView is a subscription as the console shows it: never its
// secret, but its hint, as every read after the creating one.
type subscriptionView struct {
	domain.Webhook
	Hint string
	// HeaderHints are its headers' names with masked values; the values
	// themselves are cleared, as the secret is.
	HeaderHints map[string]string
	Chart       chart
}

func viewSubscription(w domain.Webhook) subscriptionView {
	v := subscriptionView{Webhook: w, Hint: webhook.Hint(w.Secret), HeaderHints: webhook.HeaderHints(w.Headers)}
	v.Secret, v.Headers = "", nil
	return v
}

type webhooksView struct {
	Subscriptions []subscriptionView
	Total         int
	Page          domain.PageRequest
	Prev, Next    string
	Form          url.Values
	Events        []string
}

// webhooks lists the subscriptions with their state, why one is disabled,
// its last error, and its last 24 hours of attempts by outcome.
func (s *Server) webhooks(w http.ResponseWriter, r *http.Request, v *viewer) error {
	wv, err := s.webhookList(r, v)
	if err != nil {
		return err
	}
	s.render(w, r, v, http.StatusOK, "webhooks", "Webhooks", wv)
	return nil
}

func (s *Server) webhookList(r *http.Request, v *viewer) (webhooksView, error) {
	q := values(r)
	wv := webhooksView{Events: domain.WebhookEvents}
	if r.Method == http.MethodPost {
		q, wv.Form = url.Values{}, values(r)
	}
	pr, err := params.Page(q)
	if err != nil {
		return wv, err
	}
	ctx := r.Context()
	hooks, total, err := s.store.ListWebhooks(ctx, v.key.AccountID, pr)
	if err != nil {
		return wv, err
	}
	now := s.now()
	counts, err := s.store.AttemptCounts(ctx, v.key.AccountID, now.Add(-(hours-1)*time.Hour))
	if err != nil {
		return wv, err
	}
	for _, h := range hooks {
		sv := viewSubscription(h)
		sv.Chart = newChart(h.ID, counts, now)
		wv.Subscriptions = append(wv.Subscriptions, sv)
	}
	wv.Total, wv.Page = total, pr
	wv.Prev, wv.Next = pageLinks(Prefix+"/webhooks", q, pr, total)
	return wv, nil
}

// formEvents are the events a form's checkboxes chose; nil when the form
// has none (the field left out).
func formEvents(form url.Values) []string {
	if !form.Has("events") {
		return []string{}
	}
	return form["events"]
}

// secretView is the one page that shows a secret: the answer to a create
// or a rotation, never a page a link can reach again.
type secretView struct {
	Subscription            subscriptionView
	Secret                  string
	PreviousSecretExpiresAt *time.Time
}

// createWebhook subscribes an endpoint as Create webhook subscription does,
// and shows the signing secret, once.
func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request, v *viewer) error {
	form := values(r)
	name, target, scheme := form.Get("name"), form.Get("target_url"), form.Get("signature_scheme")
	changes := form.Get("include_changes") == "true"
	headers, err := formHeaders(form)
	var rate *int
	if err == nil {
		rate, err = formRate(form)
	}
	if err == nil {
		err = service.MayDirectDeliveries(v.key, formEvents(form))
	}
	var hook domain.Webhook
	if err == nil {
		hook, err = s.cfg.Webhook.NewSubscription(r.Context(), v.key.AccountID, domain.WebhookUpdate{
			Name: &name, TargetURL: &target, Events: formEvents(form), SignatureScheme: &scheme,
			Headers: headers, MaxPerSecond: rate, IncludeChanges: &changes}, s.now())
	}
	if err == nil {
		err = s.store.CreateWebhook(r.Context(), hook)
	}
	if err != nil {
		return s.after(w, r, v, err, "", "", func() (string, string, any, error) {
			wv, err := s.webhookList(r, v)
			return "webhooks", "Webhooks", wv, err
		})
	}
	s.render(w, r, v, http.StatusCreated, "secret", "Subscribed: "+hook.Name, secretView{Subscription: viewSubscription(hook), Secret: hook.Secret})
	return nil
}

type webhookView struct {
	Subscription subscriptionView
	Deliveries   []domain.Delivery
	Total        int
	Page         domain.PageRequest
	Prev, Next   string
	// The log's filter, as the form shows it.
	Status, Event, PersonID, Within string
	Statuses, Events                []string
	Windows                         []window
	Form                            url.Values
	// Emails are the persons' emails by id, for a key that may read them.
	Emails map[string]string
}

// webhook shows one subscription: its state, its edit form, and its
// delivery log, filtered by outcome, event, person and time as the API's
// log filters (the same store read, with its exact total).
func (s *Server) webhook(w http.ResponseWriter, r *http.Request, v *viewer) error {
	wv, err := s.webhookPage(r, v)
	if err != nil {
		return err
	}
	s.render(w, r, v, http.StatusOK, "webhook", wv.Subscription.Name, wv)
	return nil
}

func (s *Server) webhookPage(r *http.Request, v *viewer) (webhookView, error) {
	ctx, acc := r.Context(), v.key.AccountID
	q := values(r)
	wv := webhookView{Statuses: domain.DeliveryStatuses, Events: domain.WebhookEvents, Windows: seenWithin}
	if r.Method == http.MethodPost {
		q, wv.Form = url.Values{}, values(r)
	}
	hook, err := s.store.GetWebhook(ctx, acc, r.PathValue("id"))
	if err != nil {
		return wv, err
	}
	counts, err := s.store.AttemptCounts(ctx, acc, s.now().Add(-(hours-1)*time.Hour))
	if err != nil {
		return wv, err
	}
	wv.Subscription = viewSubscription(*hook)
	wv.Subscription.Chart = newChart(hook.ID, counts, s.now())
	pr, err := params.Page(q)
	if err != nil {
		return wv, err
	}
	f, err := s.logFilter(q)
	if err != nil {
		return wv, err
	}
	wv.Status, wv.Event, wv.PersonID, wv.Within = f.Status, f.Event, f.PersonID, q.Get("within")
	if wv.Deliveries, wv.Total, err = s.store.ListDeliveries(ctx, acc, hook.ID, f, pr); err != nil {
		return wv, err
	}
	if wv.Emails, err = s.personEmails(ctx, v, wv.Deliveries); err != nil {
		return wv, err
	}
	wv.Page = pr
	wv.Prev, wv.Next = pageLinks(Prefix+"/webhooks/"+hook.ID, q, pr, wv.Total)
	return wv, nil
}

// logFilter reads the log's filter form: status, event and person as the
// API reads them (params.DeliveryFilter), and "within" a window back from
// now as since. An empty field is no filter.
func (s *Server) logFilter(q url.Values) (domain.DeliveryFilter, error) {
	api := url.Values{}
	for _, name := range []string{"status", "event", "person_id"} {
		if q.Get(name) != "" {
			api.Set(name, q.Get(name))
		}
	}
	if within := q.Get("within"); within != "" {
		i := slices.IndexFunc(seenWithin, func(o window) bool { return o.Value == within })
		if i < 0 {
			return domain.DeliveryFilter{}, domain.ParamError("within", "within must be one of 1h, 24h, 168h or 720h; got %q.", within)
		}
		api.Set("since", s.now().Add(-seenWithin[i].span).Format(time.RFC3339Nano))
	}
	return params.DeliveryFilter(api)
}

// updateWebhook edits a subscription as Update webhook subscription does:
// the same checks of its fields, the same store write (reactivating clears
// the failure streak and the disabled reason).
func (s *Server) updateWebhook(w http.ResponseWriter, r *http.Request, v *viewer) error {
	form := values(r)
	ctx, acc, id := r.Context(), v.key.AccountID, r.PathValue("id")
	hook, err := s.store.GetWebhook(ctx, acc, id)
	if err != nil {
		return err // absent before any resolution work, as the API
	}
	name, active := form.Get("name"), form.Get("is_active") == "true"
	scheme := form.Get("signature_scheme")
	changes := form.Get("include_changes") == "true"
	u := domain.WebhookUpdate{Name: &name, IsActive: &active, SignatureScheme: &scheme, IncludeChanges: &changes}
	// Headers are shown masked, so the form cannot send them back: an
	// empty field keeps them, and a checkbox removes them.
	u.Headers, err = formHeaders(form)
	if err == nil && u.Headers == nil && form.Get("remove_headers") == "true" {
		u.Headers = map[string]string{}
	}
	if err == nil {
		u.MaxPerSecond, err = formRate(form)
	}
	// The form sends every field; only a target or events that differ
	// from the subscription's are a change of where deliveries go.
	if target := form.Get("target_url"); target != hook.TargetURL {
		u.TargetURL = &target
	}
	if events := formEvents(form); !sameEvents(events, hook.Events) {
		u.Events = events
	}
	if err == nil {
		err = service.MayChangeSubscription(v.key, hook, u)
	}
	if err == nil {
		err = s.cfg.Webhook.CheckSubscription(ctx, u)
	}
	if err == nil {
		_, err = s.store.UpdateWebhook(ctx, acc, id, u, s.now())
	}
	return s.after(w, r, v, err, Prefix+"/webhooks/"+id, "saved", func() (string, string, any, error) {
		wv, err := s.webhookPage(r, v)
		return "webhook", wv.Subscription.Name, wv, err
	})
}

// rotateSecret issues a new signing secret as Rotate webhook secret does
// and shows it, once, with how long the previous one still signs.
func (s *Server) rotateSecret(w http.ResponseWriter, r *http.Request, v *viewer) error {
	now := s.now()
	hook, rounds, err := s.store.RotateWebhookSecret(r.Context(), v.key.AccountID, r.PathValue("id"), webhook.NewSecret(), now,
		s.cfg.Webhook.OverlapUntil(now))
	if err != nil {
		return err
	}
	until := s.cfg.Webhook.PreviousSecretExpiry(hook, rounds, now)
	s.render(w, r, v, http.StatusOK, "secret", "New secret: "+hook.Name, secretView{
		Subscription: viewSubscription(*hook), Secret: hook.Secret, PreviousSecretExpiresAt: &until})
	return nil
}

// deleteWebhook removes a subscription with its deliveries, as Delete
// webhook subscription does.
func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request, v *viewer) error {
	if err := s.store.DeleteWebhook(r.Context(), v.key.AccountID, r.PathValue("id")); err != nil {
		return err
	}
	return s.done(w, r, Prefix+"/webhooks", "deleted")
}

type deliveryView struct {
	Subscription subscriptionView
	Delivery     *domain.Delivery
	Attempts     []domain.DeliveryAttempt
	// Body is the body as sent, indented for reading; empty for a key that
	// may not read the person it holds (viewer.SeesDeliveryBody).
	Body string
	// Changes is the body's changes member (HasChanges: it has one), for
	// the same key.
	Changes    []string
	HasChanges bool
	// Emails holds the person's email, for a key that may read it.
	Emails map[string]string
}

// delivery shows one delivery, as Get delivery answers the same key: each
// attempt with the headers it carried, the answer's status, its time and
// its error, and the body as sent for a key that may read persons.
func (s *Server) delivery(w http.ResponseWriter, r *http.Request, v *viewer) error {
	ctx, acc := r.Context(), v.key.AccountID
	hook, err := s.store.GetWebhook(ctx, acc, r.PathValue("id"))
	if err != nil {
		return err
	}
	d, attempts, err := s.store.GetDelivery(ctx, acc, hook.ID, r.PathValue("delivery_id"))
	if err != nil {
		return err
	}
	var body bytes.Buffer
	var changes []string
	if v.SeesDeliveryBody() {
		changes = deliveryChanges(d.Body)
		if json.Indent(&body, d.Body, "", "  ") != nil {
			body.Reset()
			body.Write(d.Body)
		}
	}
	slices.Reverse(attempts) // the latest first, as the log
	emails, err := s.personEmails(ctx, v, []domain.Delivery{*d})
	if err != nil {
		return err
	}
	s.render(w, r, v, http.StatusOK, "delivery", "Delivery "+d.ID, deliveryView{
		Subscription: viewSubscription(*hook), Delivery: d, Attempts: attempts, Body: body.String(), Changes: changes, HasChanges: changes != nil, Emails: emails})
	return nil
}

// sameEvents says whether two lists name the same events.
func sameEvents(a, b []string) bool {
	return len(a) == len(b) && !slices.ContainsFunc(a, func(e string) bool { return !slices.Contains(b, e) })
}

// redeliver makes a delivery pending again, as Redeliver does: with the
// same scopes, webhooks:read for the delivery it shows and those its body
// reveals.
func (s *Server) redeliver(w http.ResponseWriter, r *http.Request, v *viewer) error {
	id, did := r.PathValue("id"), r.PathValue("delivery_id")
	if err := v.key.Require(domain.ScopeWebhooksRead); err != nil {
		return err
	}
	d, _, err := s.store.GetDelivery(r.Context(), v.key.AccountID, id, did)
	if err != nil {
		return err
	}
	if err := service.MayRedeliver(v.key, d.Event); err != nil {
		return err
	}
	if _, err := s.store.Redeliver(r.Context(), v.key.AccountID, id, did, s.now()); err != nil {
		return err
	}
	return s.done(w, r, Prefix+"/webhooks/"+id+"/deliveries/"+did, "redelivered")
}

type redeliverView struct {
	Subscription subscriptionView
	Within       string
	Label        string
	Since        time.Time
	Count        int
}

// confirmRedeliverFailed shows how many failed deliveries a redelivery
// since a time would queue again (the log's exact total of them) before
// anything is done: a read of the log, which needs webhooks:read as well
// as the redelivery's webhooks:write.
func (s *Server) confirmRedeliverFailed(w http.ResponseWriter, r *http.Request, v *viewer) error {
	if err := service.MayRedeliverFailed(v.key); err != nil {
		return err
	}
	ctx, acc := r.Context(), v.key.AccountID
	hook, err := s.store.GetWebhook(ctx, acc, r.PathValue("id"))
	if err != nil {
		return err
	}
	within := values(r).Get("within")
	i := slices.IndexFunc(seenWithin, func(o window) bool { return o.Value == within })
	if i < 0 {
		return domain.ParamError("within", "within must be one of 1h, 24h, 168h or 720h; got %q.", within)
	}
	since := s.now().Add(-seenWithin[i].span)
	_, n, err := s.store.ListDeliveries(ctx, acc, hook.ID, domain.DeliveryFilter{Status: domain.DeliveryFailed, Since: &since},
		domain.PageRequest{Page: 1, Size: 1})
	if err != nil {
		return err
	}
	s.render(w, r, v, http.StatusOK, "redeliver", "Redeliver failed deliveries", redeliverView{
		Subscription: viewSubscription(*hook), Within: within, Label: seenWithin[i].Label, Since: since, Count: n})
	return nil
}

// redeliverFailed queues every failed delivery since the confirmed time
// again, as the API's redeliver-failed does.
func (s *Server) redeliverFailed(w http.ResponseWriter, r *http.Request, v *viewer) error {
	if err := service.MayRedeliverFailed(v.key); err != nil {
		return err
	}
	id := r.PathValue("id")
	since, err := params.Time(values(r), "since")
	if err != nil {
		return err
	}
	if since == nil {
		return domain.BodyError("/since", "since is required.")
	}
	if _, err := s.store.RedeliverFailed(r.Context(), v.key.AccountID, id, *since, s.now()); err != nil {
		return err
	}
	return s.done(w, r, Prefix+"/webhooks/"+id+"?status=failed", "requeued")
}
