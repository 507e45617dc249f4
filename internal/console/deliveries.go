package console

import (
	"context"
	"net/http"
	"slices"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/params"
)

// The delivery log across every subscription of the account, filtered as
// a subscription's log is, and narrowed to one subscription on demand.
func (s *Server) deliveryRoutes() {
	s.page("GET "+Prefix+"/deliveries", domain.ScopeWebhooksRead, s.accountDeliveries)
}

type accountDeliveriesView struct {
	Deliveries []domain.Delivery
	// Names are the subscriptions' names by id, for the log's column and
	// the filter's choices (Subscriptions, oldest first).
	Names         map[string]string
	Subscriptions []domain.Webhook
	Emails        map[string]string
	Total         int
	Page          domain.PageRequest
	Prev, Next    string
	// The filter, as the form shows it.
	Webhook, Status, Event, PersonID, Within string
	Statuses, Events                         []string
	Windows                                  []window
}

// subscriptionsShown bounds the subscriptions the filter offers by name.
const subscriptionsShown = params.MaxPageSize

func (s *Server) accountDeliveries(w http.ResponseWriter, r *http.Request, v *viewer) error {
	ctx, acc, q := r.Context(), v.key.AccountID, values(r)
	dv := accountDeliveriesView{Statuses: domain.DeliveryStatuses, Events: domain.WebhookEvents, Windows: seenWithin,
		Names: map[string]string{}}
	pr, err := params.Page(q)
	if err != nil {
		return err
	}
	f, err := s.logFilter(q)
	if err != nil {
		return err
	}
	hooks, _, err := s.store.ListWebhooks(ctx, acc, domain.PageRequest{Page: 1, Size: subscriptionsShown})
	if err != nil {
		return err
	}
	dv.Subscriptions = hooks
	for _, h := range hooks {
		dv.Names[h.ID] = h.Name
	}
	dv.Webhook, dv.Status, dv.Event, dv.PersonID, dv.Within = q.Get("webhook_id"), f.Status, f.Event, f.PersonID, q.Get("within")
	if dv.Webhook != "" {
		dv.Deliveries, dv.Total, err = s.store.ListDeliveries(ctx, acc, dv.Webhook, f, pr)
	} else {
		dv.Deliveries, dv.Total, err = s.store.ListAccountDeliveries(ctx, acc, f, pr)
	}
	if err != nil {
		return err
	}
	if dv.Emails, err = s.personEmails(ctx, v, dv.Deliveries); err != nil {
		return err
	}
	dv.Page = pr
	dv.Prev, dv.Next = pageLinks(Prefix+"/deliveries", q, pr, dv.Total)
	s.render(w, r, v, http.StatusOK, "deliveries", "Deliveries", dv)
	return nil
}

// personEmails are the emails of the persons the deliveries were made for,
// by id, to a key that may read persons (nil to any other, which sees the
// ids alone, as the API's log answers it). An erased person has none.
func (s *Server) personEmails(ctx context.Context, v *viewer, ds []domain.Delivery) (map[string]string, error) {
	if !v.Can(string(domain.ScopePersonsRead)) || len(ds) == 0 {
		return nil, nil
	}
	var ids []string
	for _, d := range ds {
		if !slices.Contains(ids, d.PersonID) {
			ids = append(ids, d.PersonID)
		}
	}
	persons, err := s.store.GetPersons(ctx, v.key.AccountID, ids)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for id, p := range persons {
		if p != nil && p.Email != nil {
			out[id] = *p.Email
		}
	}
	return out, nil
}
