package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

const webhookColumns = `id, account_id, name, target_url, events, is_active, disabled_reason, last_error,
	secret, secret_version, streak_started_at, streak_failures, created_at, updated_at, local_listener, listener_host,
	signature_scheme, previous_secret, previous_secret_until, headers, max_per_second, include_changes`

// scanWebhook reads a subscription, its secrets opened.
func (s *Store) scanWebhook(sc scanner) (*domain.Webhook, error) {
	var w domain.Webhook
	var events string
	var reason, lastErr sql.NullString
	var streak sql.NullInt64
	var created, updated int64
	var previous sql.NullString
	var previousUntil sql.NullInt64
	var headers sql.NullString
	if err := sc.Scan(&w.ID, &w.AccountID, &w.Name, &w.TargetURL, &events, &w.IsActive, &reason, &lastErr,
		&w.Secret, &w.SecretVersion, &streak, &w.StreakFailures, &created, &updated, &w.LocalListener, &w.ListenerHost,
		&w.SignatureScheme, &previous, &previousUntil, &headers, &w.MaxPerSecond, &w.IncludeChanges); err != nil {
		return nil, err
	}
	w.Previous = retiredSecret(previous, previousUntil)
	if err := s.openWebhookSecrets(w.ID, &w.Secret, w.Previous); err != nil {
		return nil, err
	}
	var err error
	if w.Headers, err = s.openHeaders(w.ID, headers); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(events), &w.Events); err != nil {
		return nil, err
	}
	w.DisabledReason, w.LastError = strPtr(reason), strPtr(lastErr)
	w.StreakStartedAt = timePtr(streak)
	w.CreatedAt, w.UpdatedAt = domain.FromMillis(created), domain.FromMillis(updated)
	return &w, nil
}

// openWebhookSecrets opens a subscription's secrets as read: its current
// one and, when set, its previous one.
func (s *Store) openWebhookSecrets(webhookID string, current *string, previous *domain.RetiredSecret) error {
	var err error
	if *current, err = s.openText(*current, webhookPlace(webhookID)); err != nil {
		return err
	}
	if previous != nil {
		previous.Secret, err = s.openText(previous.Secret, webhookPlace(webhookID))
	}
	return err
}

func retiredSecret(secret sql.NullString, until sql.NullInt64) *domain.RetiredSecret {
	if !secret.Valid || !until.Valid {
		return nil
	}
	return &domain.RetiredSecret{Secret: secret.String, Until: domain.FromMillis(until.Int64)}
}

// sealHeaders is how a subscription's headers are stored: their JSON
// sealed as its secret is, for its place; NULL for none.
func (s *Store) sealHeaders(webhookID string, headers map[string]string) (any, error) {
	if len(headers) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(headers)
	if err != nil {
		return nil, err
	}
	return s.sealText(string(b), webhookPlace(webhookID))
}

// openHeaders reads stored headers (sealHeaders); nil for none.
func (s *Store) openHeaders(webhookID string, stored sql.NullString) (map[string]string, error) {
	if !stored.Valid {
		return nil, nil
	}
	text, err := s.openText(stored.String, webhookPlace(webhookID))
	if err != nil {
		return nil, err
	}
	var out map[string]string
	return out, json.Unmarshal([]byte(text), &out)
}

func encodeEvents(events []string) string {
	b, _ := json.Marshal(events) // a []string always marshals
	return string(b)
}

// CreateWebhook stores a new subscription at secret version 1.
func (s *Store) CreateWebhook(ctx context.Context, w domain.Webhook) (err error) {
	defer named("CreateWebhook", &err)
	host := ""
	if w.LocalListener {
		if w.ListenerHost == "" {
			return errors.New("a local listener's subscription needs the host it listens on")
		}
		host = w.ListenerHost
	}
	scheme := w.SignatureScheme
	if scheme == "" {
		scheme = domain.SchemePDS
	}
	secret, err := s.sealText(w.Secret, webhookPlace(w.ID))
	if err != nil {
		return err
	}
	headers, err := s.sealHeaders(w.ID, w.Headers)
	if err != nil {
		return err
	}
	_, err = s.writer().exec(ctx, `INSERT INTO webhooks
		(id, account_id, name, target_url, events, is_active, secret, secret_version, streak_failures, created_at, updated_at,
			local_listener, listener_host, signature_scheme, headers, max_per_second, include_changes)
		VALUES ($1, $2, $3, $4, $5, $6, $7, 1, 0, $8, $9, $10, $11, $12, $13, $14, $15)`,
		w.ID, w.AccountID, w.Name, w.TargetURL, encodeEvents(w.Events), true, secret,
		w.CreatedAt.UnixMilli(), w.CreatedAt.UnixMilli(), w.LocalListener, host, scheme, headers, w.MaxPerSecond, w.IncludeChanges)
	return err
}

// GetWebhook returns one subscription of the account.
func (s *Store) GetWebhook(ctx context.Context, accountID, id string) (_ *domain.Webhook, err error) {
	defer named("GetWebhook", &err)
	return safeValue(ctx, s, func(q querier) (*domain.Webhook, error) { return getWebhook(ctx, q, accountID, id) })
}

func getWebhook(ctx context.Context, q querier, accountID, id string) (*domain.Webhook, error) {
	return q.s.scanWebhookRow(q.queryRow(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE account_id = $1 AND id = $2`, accountID, id), id)
}

// lockWebhook reads a subscription inside a transaction and, on PostgreSQL,
// locks its row until the transaction ends (SQLite has one writer anyway).
func lockWebhook(ctx context.Context, q querier, accountID, id string) (*domain.Webhook, error) {
	return q.s.scanWebhookRow(q.queryRow(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE account_id = $1 AND id = $2`+
		q.s.dialect.LockRows, accountID, id), id)
}

func (s *Store) scanWebhookRow(r *row, id string) (*domain.Webhook, error) {
	w, err := s.scanWebhook(r)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, domain.NotFound("webhook", id)
	}
	return w, err
}

// ListWebhooks pages the account's subscriptions, oldest first.
func (s *Store) ListWebhooks(ctx context.Context, accountID string, p domain.PageRequest) (_ []domain.Webhook, _ int, err error) {
	defer named("ListWebhooks", &err)
	return safePage(ctx, s, func(q querier) ([]domain.Webhook, int, error) {
		return listPage(ctx, q, webhookColumns, `webhooks WHERE account_id = $1`, `created_at, id`,
			[]any{accountID}, p, byValue(s.scanWebhook))
	})
}

// UpdateWebhook applies a validated patch in one transaction.
func (s *Store) UpdateWebhook(ctx context.Context, accountID, id string, u domain.WebhookUpdate, now time.Time) (_ *domain.Webhook, err error) {
	defer named("UpdateWebhook", &err)
	var out *domain.Webhook
	err = s.inTx(ctx, func(q querier) error {
		w, err := lockWebhook(ctx, q, accountID, id)
		if err != nil {
			return err
		}
		if u.Name != nil {
			w.Name = *u.Name
		}
		if u.TargetURL != nil {
			// A target set here passed the API's rules: the loopback
			// exception of a local listener ends with its own target.
			w.TargetURL, w.LocalListener, w.ListenerHost = *u.TargetURL, false, ""
		}
		if u.Events != nil {
			w.Events = u.Events
		}
		if u.SignatureScheme != nil {
			w.SignatureScheme = *u.SignatureScheme
		}
		if u.Headers != nil {
			w.Headers = u.Headers
			if len(w.Headers) == 0 {
				w.Headers = nil
			}
		}
		if u.MaxPerSecond != nil {
			w.MaxPerSecond = *u.MaxPerSecond
		}
		if u.IncludeChanges != nil {
			w.IncludeChanges = *u.IncludeChanges
		}
		headers, err := s.sealHeaders(w.ID, w.Headers)
		if err != nil {
			return err
		}
		switch {
		case u.IsActive == nil || *u.IsActive == w.IsActive:
		case *u.IsActive:
			// Reactivation forgives the streak; last_error stays until a delivery succeeds.
			w.IsActive, w.DisabledReason, w.StreakStartedAt, w.StreakFailures = true, nil, nil, 0
		default:
			reason := domain.DisabledManual
			w.IsActive, w.DisabledReason = false, &reason
			if err := cancelPending(ctx, q, w.ID, "", cancelManual); err != nil {
				return err
			}
		}
		w.UpdatedAt = now
		_, err = q.exec(ctx, `UPDATE webhooks SET name = $1, target_url = $2, events = $3, is_active = $4, disabled_reason = $5,
			streak_started_at = $6, streak_failures = $7, updated_at = $8, local_listener = $9, listener_host = $10,
			signature_scheme = $11, headers = $12, max_per_second = $13, include_changes = $14
			WHERE account_id = $15 AND id = $16`,
			w.Name, w.TargetURL, encodeEvents(w.Events), w.IsActive, nullable(w.DisabledReason),
			nullMillis(w.StreakStartedAt), w.StreakFailures, now.UnixMilli(), w.LocalListener, w.ListenerHost,
			w.SignatureScheme, headers, w.MaxPerSecond, w.IncludeChanges, accountID, id)
		out = w
		return err
	})
	return out, err
}

// DeleteWebhook removes a subscription; its deliveries, attempts and
// retired secrets go with it (ON DELETE CASCADE).
func (s *Store) DeleteWebhook(ctx context.Context, accountID, id string) (err error) {
	defer named("DeleteWebhook", &err)
	res, err := s.writer().exec(ctx, `DELETE FROM webhooks WHERE account_id = $1 AND id = $2`, accountID, id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return domain.NotFound("webhook", id)
	}
	return nil
}

// RotateWebhookSecret retires the current secret and installs the next;
// the retired one stays the subscription's previous secret until
// overlapUntil.
func (s *Store) RotateWebhookSecret(ctx context.Context, accountID, id, secret string, now, overlapUntil time.Time) (_ *domain.Webhook, _ []domain.PendingRound, err error) {
	defer named("RotateWebhookSecret", &err)
	var (
		out    *domain.Webhook
		rounds []domain.PendingRound
	)
	err = s.inTx(ctx, func(q querier) error {
		// Reset: the committer may run this function again (see committer).
		rounds = nil
		w, err := lockWebhook(ctx, q, accountID, id)
		if err != nil {
			return err
		}
		// Each column gets a seal of its own (a fresh nonce each).
		var sealed [3]string
		for i, v := range []string{secret, w.Secret, w.Secret} {
			if sealed[i], err = s.sealText(v, webhookPlace(id)); err != nil {
				return err
			}
		}
		if _, err := q.exec(ctx, `UPDATE webhooks SET secret = $1, secret_version = $2, updated_at = $3,
			previous_secret = $4, previous_secret_until = $5 WHERE id = $6`,
			sealed[0], w.SecretVersion+1, now.UnixMilli(), sealed[1], overlapUntil.UnixMilli(), id); err != nil {
			return err
		}
		if _, err := q.exec(ctx, `INSERT INTO webhook_secrets (webhook_id, version, secret, retired_at) VALUES ($1, $2, $3, $4)`,
			id, w.SecretVersion, sealed[2], now.UnixMilli()); err != nil {
			return err
		}
		rows, err := q.query(ctx, `SELECT attempts - round_start, MAX(next_attempt_at) FROM deliveries
			WHERE webhook_id = $1 AND secret_version = $2 AND status = `+pendingSQL+` AND next_attempt_at IS NOT NULL
			GROUP BY attempts - round_start`, id, w.SecretVersion)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r domain.PendingRound
			var next int64
			if err := rows.Scan(&r.RoundAttempts, &next); err != nil {
				return err
			}
			r.NextAttemptAt = domain.FromMillis(next)
			rounds = append(rounds, r)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if err := dropUnusedSecrets(ctx, q, id); err != nil {
			return err
		}
		w.Previous = &domain.RetiredSecret{Secret: w.Secret, Until: domain.FromMillis(overlapUntil.UnixMilli())}
		w.Secret, w.SecretVersion, w.UpdatedAt = secret, w.SecretVersion+1, now
		out = w
		return nil
	})
	return out, rounds, err
}

// dropUnusedSecrets deletes the retired secrets of a subscription that no
// pending delivery is signed with any more.
func dropUnusedSecrets(ctx context.Context, q querier, webhookID string) error {
	_, err := q.exec(ctx, `DELETE FROM webhook_secrets WHERE webhook_id = $1 AND NOT EXISTS
		(SELECT 1 FROM deliveries d WHERE d.webhook_id = webhook_secrets.webhook_id
			AND d.secret_version = webhook_secrets.version AND d.status = `+pendingSQL+`)`, webhookID)
	return err
}

// Why pending deliveries were cancelled, as their last_error says.
const (
	cancelManual   = "canceled: the subscription was deactivated"
	cancelGone     = "canceled: the subscription was retired after the target answered 410 Gone"
	cancelFailures = "canceled: the subscription was deactivated after a sustained failure streak"
)

// cancelPending fails every pending delivery of a subscription except one
// (the delivery whose attempt caused it, if any), then drops the secrets
// that only they needed. An attempt in flight keeps its lease, so its
// result is still recorded.
func cancelPending(ctx context.Context, q querier, webhookID, except, why string) error {
	if _, err := q.exec(ctx, `UPDATE deliveries SET status = $1, last_error = $2, next_attempt_at = NULL
		WHERE webhook_id = $3 AND status = $4 AND id <> $5`,
		domain.DeliveryFailed, why, webhookID, domain.DeliveryPending, except); err != nil {
		return err
	}
	return dropUnusedSecrets(ctx, q, webhookID)
}
