package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

// deactivated tells the account that pds switched job's subscription off
// (a failure streak or a 410), in the transaction that does it: one
// webhook.disabled delivery, due at once, to every other active
// subscription of the account that lists it. Only the first deactivation
// of the locked row tells; an owner's switch-off (UpdateWebhook) never
// comes here.
func (sub *subState) deactivated(ctx context.Context, q querier, job domain.DeliveryJob, at int64) error {
	if !sub.active {
		return nil
	}
	sub.active = false
	var (
		data    domain.WebhookDisabledData
		lastErr sql.NullString
	)
	if err := q.queryRow(ctx, `SELECT id, name, target_url, last_error FROM webhooks WHERE account_id = $1 AND id = $2`,
		job.AccountID, job.WebhookID).Scan(&data.ID, &data.Name, &data.TargetURL, &lastErr); err != nil {
		return err
	}
	when := domain.FromMillis(at)
	data.LastError, data.DateDisabled = strPtr(lastErr), domain.T(when)
	listeners, err := queryAll(ctx, q, func(sc scanner) (domain.Webhook, error) {
		var w domain.Webhook
		var events string
		if err := sc.Scan(&w.ID, &events, &w.SecretVersion, &w.IncludeChanges); err != nil {
			return w, err
		}
		return w, json.Unmarshal([]byte(events), &w.Events)
	}, `SELECT id, events, secret_version, include_changes FROM webhooks WHERE account_id = $1 AND is_active = $2 AND id <> $3 ORDER BY id`,
		job.AccountID, true, job.WebhookID)
	if err != nil {
		return err
	}
	for _, w := range listeners {
		if !w.Wants(domain.EventWebhookDisabled) {
			continue
		}
		if err := insertDelivery(ctx, q, disabledDelivery(job.AccountID, w, data, when)); err != nil {
			return err
		}
	}
	return nil
}

// disabledDelivery is the webhook.disabled delivery to w: about no person.
func disabledDelivery(accountID string, w domain.Webhook, data domain.WebhookDisabledData, now time.Time) domain.Delivery {
	id := domain.NewDeliveryID()
	body := data.Body(id, now)
	if w.IncludeChanges {
		body = domain.WithChanges(body, nil)
	}
	return domain.Delivery{
		ID: id, AccountID: accountID, WebhookID: w.ID, Event: domain.EventWebhookDisabled,
		Body: body, SecretVersion: w.SecretVersion, Status: domain.DeliveryPending,
		NextAttemptAt: &now, CreatedAt: now,
	}
}
