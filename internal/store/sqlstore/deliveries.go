package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// deliveryColumns leave the body out: the log never shows it and a page of
// bodies would be read for nothing.
const deliveryColumns = `d.id, d.account_id, d.webhook_id, d.event, d.person_id, d.secret_version, d.status, d.attempts,
	d.round_start, d.last_status_code, d.last_error, d.next_attempt_at, d.lease_until, d.created_at`

func scanDelivery(sc scanner, extra ...any) (*domain.Delivery, error) {
	var d domain.Delivery
	var code, next, lease sql.NullInt64
	var lastErr sql.NullString
	var created int64
	dest := append([]any{&d.ID, &d.AccountID, &d.WebhookID, &d.Event, &d.PersonID, &d.SecretVersion, &d.Status,
		&d.Attempts, &d.RoundStart, &code, &lastErr, &next, &lease, &created}, extra...)
	if err := sc.Scan(dest...); err != nil {
		return nil, err
	}
	if code.Valid {
		c := int(code.Int64)
		d.LastStatusCode = &c
	}
	d.LastError = strPtr(lastErr)
	d.NextAttemptAt, d.LeaseUntil = timePtr(next), timePtr(lease)
	d.CreatedAt = domain.FromMillis(created)
	return &d, nil
}

// ListDeliveries pages a subscription's deliveries, newest first.
func (s *Store) ListDeliveries(ctx context.Context, accountID, webhookID string, p domain.PageRequest) ([]domain.Delivery, int, error) {
	if _, err := s.GetWebhook(ctx, accountID, webhookID); err != nil {
		return nil, 0, err
	}
	scan := func(sc scanner) (*domain.Delivery, error) { return scanDelivery(sc) }
	return listPage(ctx, s.reader(), deliveryColumns, `deliveries d WHERE d.webhook_id = $1 AND d.account_id = $2`,
		`d.created_at DESC, d.id DESC`, []any{webhookID, accountID}, p, byValue(scan))
}

func getDelivery(ctx context.Context, q querier, accountID, webhookID, id string) (*domain.Delivery, error) {
	d, err := scanDelivery(q.queryRow(ctx, `SELECT `+deliveryColumns+` FROM deliveries d
		WHERE d.id = $1 AND d.webhook_id = $2 AND d.account_id = $3`, id, webhookID, accountID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, domain.NotFound("delivery", id)
	}
	return d, err
}

// GetDelivery returns a delivery of the subscription with its attempts.
func (s *Store) GetDelivery(ctx context.Context, accountID, webhookID, id string) (*domain.Delivery, []domain.DeliveryAttempt, error) {
	if _, err := s.GetWebhook(ctx, accountID, webhookID); err != nil {
		return nil, nil, err
	}
	d, err := getDelivery(ctx, s.reader(), accountID, webhookID, id)
	if err != nil {
		return nil, nil, err
	}
	attempts, err := queryAll(ctx, s.reader(), scanAttempt, `SELECT attempt, attempted_at, status_code, error, duration_ms
		FROM delivery_attempts WHERE delivery_id = $1 ORDER BY attempt`, id)
	if err != nil {
		return nil, nil, err
	}
	return d, attempts, nil
}

func scanAttempt(sc scanner) (domain.DeliveryAttempt, error) {
	var a domain.DeliveryAttempt
	var at int64
	var code sql.NullInt64
	var msg sql.NullString
	if err := sc.Scan(&a.Attempt, &at, &code, &msg, &a.DurationMS); err != nil {
		return a, err
	}
	a.AttemptedAt, a.Error = domain.FromMillis(at), strPtr(msg)
	if code.Valid {
		c := int(code.Int64)
		a.StatusCode = &c
	}
	return a, nil
}

// Redeliver queues a delivery again under its id.
func (s *Store) Redeliver(ctx context.Context, accountID, webhookID, id string, now time.Time) (*domain.Delivery, error) {
	var out *domain.Delivery
	err := s.inTx(ctx, func(q querier) error {
		w, err := lockWebhook(ctx, q, accountID, webhookID)
		if err != nil {
			return err
		}
		d, err := getDelivery(ctx, q, accountID, webhookID, id)
		if err != nil {
			return err
		}
		if !w.IsActive {
			return &domain.ConflictError{Detail: `The subscription is inactive; reactivate it with PATCH {"is_active": true} before redelivering.`}
		}
		if d.LeaseUntil != nil && d.LeaseUntil.After(now) {
			return &domain.ConflictError{Detail: "An attempt of this delivery is in progress; redeliver it once the attempt has finished."}
		}
		res, err := q.exec(ctx, `UPDATE deliveries SET status = $1, next_attempt_at = $2, round_start = attempts,
			secret_version = $3, lease_until = NULL, lease_token = NULL WHERE id = $4`,
			domain.DeliveryPending, now.UnixMilli(), w.SecretVersion, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return domain.NotFound("delivery", id) // pruned since it was read
		}
		if err := dropUnusedSecrets(ctx, q, webhookID); err != nil {
			return err
		}
		d.Status, d.RoundStart, d.SecretVersion, d.LeaseUntil = domain.DeliveryPending, d.Attempts, w.SecretVersion, nil
		d.NextAttemptAt = &now
		out = d
		return nil
	})
	return out, err
}

// ClaimDeliveries leases due deliveries of active subscriptions and returns
// them with their target and the secret of their version.
func (s *Store) ClaimDeliveries(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]domain.DeliveryJob, error) {
	n := now.UnixMilli()
	if due, err := s.anyDue(ctx, `SELECT 1 FROM deliveries WHERE status = '`+domain.DeliveryPending+`'
		AND next_attempt_at <= $1 AND (lease_until IS NULL OR lease_until <= $2) LIMIT 1`, n); !due || err != nil {
		return nil, err
	}
	token := domain.RandomHex(16)
	var jobs []domain.DeliveryJob
	err := s.inTx(ctx, func(q querier) error {
		res, err := q.exec(ctx, `UPDATE deliveries SET lease_until = $1, lease_token = $2
			WHERE id IN (SELECT d.id FROM deliveries d JOIN webhooks w ON w.id = d.webhook_id
				WHERE d.status = $3 AND d.next_attempt_at <= $4 AND (d.lease_until IS NULL OR d.lease_until <= $5) AND w.is_active = $6
				ORDER BY d.next_attempt_at LIMIT $7`+s.dialect.ClaimDeliveryRows+`)
			AND status = $8 AND next_attempt_at <= $9 AND (lease_until IS NULL OR lease_until <= $10)`,
			now.Add(lease).UnixMilli(), token, domain.DeliveryPending, n, n, true, limit, domain.DeliveryPending, n, n)
		if err != nil {
			return err
		}
		if claimed, _ := res.RowsAffected(); claimed == 0 {
			return nil
		}
		// A version older than the current one is signed with its retired
		// secret, which is kept while a pending delivery needs it.
		rows, err := q.query(ctx, `SELECT `+deliveryColumns+`, d.body, w.target_url,
				COALESCE(CASE WHEN d.secret_version = w.secret_version THEN w.secret ELSE ws.secret END, w.secret)
			FROM deliveries d JOIN webhooks w ON w.id = d.webhook_id
			LEFT JOIN webhook_secrets ws ON ws.webhook_id = d.webhook_id AND ws.version = d.secret_version
			WHERE d.lease_token = $1 ORDER BY d.next_attempt_at, d.id`, token)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			job := domain.DeliveryJob{LeaseToken: token}
			var body string
			d, err := scanDelivery(rows, &body, &job.TargetURL, &job.Secret)
			if err != nil {
				return err
			}
			d.Body = []byte(body)
			job.Delivery = *d
			jobs = append(jobs, job)
		}
		return rows.Err()
	})
	return jobs, err
}

// FinishAttempt records an attempt and what it means for the delivery and
// its subscription. The subscription row is locked before the delivery row,
// the order every transaction that touches both follows.
func (s *Store) FinishAttempt(ctx context.Context, job domain.DeliveryJob, r store.AttemptResult) error {
	return s.inTx(ctx, func(q querier) error {
		if _, err := lockWebhook(ctx, q, job.AccountID, job.WebhookID); errors.Is(err, domain.ErrNotFound) {
			return nil // deleted while the attempt ran
		} else if err != nil {
			return err
		}
		var status string
		var attempts int
		var prevErr sql.NullString
		err := q.queryRow(ctx, `SELECT status, attempts, last_error FROM deliveries WHERE id = $1 AND lease_token = $2`+s.dialect.LockRows,
			job.ID, job.LeaseToken).Scan(&status, &attempts, &prevErr)
		if errors.Is(err, sql.ErrNoRows) {
			return nil // the lease passed to another worker
		}
		if err != nil {
			return err
		}
		at := r.Attempt.AttemptedAt
		newStatus, next, lastErr := r.Status, r.NextAttemptAt, r.Error
		// Cancelled while in flight: the attempt is recorded, but only a
		// success changes the delivery, and the subscription is left alone.
		cancelled := status != domain.DeliveryPending
		if cancelled && r.Status != domain.DeliverySucceeded {
			newStatus, next, lastErr = status, nil, strPtr(prevErr)
		}
		if _, err := q.exec(ctx, `UPDATE deliveries SET status = $1, attempts = $2, last_status_code = $3, last_error = $4,
			next_attempt_at = $5, lease_until = NULL, lease_token = NULL WHERE id = $6`,
			newStatus, attempts+1, nullInt(r.Attempt.StatusCode), nullStr(lastErr), nullMillis(next), job.ID); err != nil {
			return err
		}
		if _, err := q.exec(ctx, `INSERT INTO delivery_attempts (delivery_id, attempt, attempted_at, status_code, error, duration_ms)
			VALUES ($1, $2, $3, $4, $5, $6)`, job.ID, attempts+1, at.UnixMilli(), nullInt(r.Attempt.StatusCode),
			nullStr(r.Attempt.Error), r.Attempt.DurationMS); err != nil {
			return err
		}
		if !cancelled {
			if err := applyToWebhook(ctx, q, job, r); err != nil {
				return err
			}
		}
		if newStatus != domain.DeliveryPending {
			return dropUnusedSecrets(ctx, q, job.WebhookID)
		}
		return nil
	})
}

// applyToWebhook carries an attempt's outcome to the subscription: a
// success ends the failure streak, a failed delivery extends it and may
// deactivate the subscription, 410 retires it.
func applyToWebhook(ctx context.Context, q querier, job domain.DeliveryJob, r store.AttemptResult) error {
	at := r.Attempt.AttemptedAt.UnixMilli()
	switch {
	case r.Status == domain.DeliverySucceeded:
		_, err := q.exec(ctx, `UPDATE webhooks SET streak_started_at = NULL, streak_failures = 0, last_error = NULL
			WHERE id = $1 AND (streak_failures <> 0 OR last_error IS NOT NULL)`, job.WebhookID)
		return err
	case r.Gone:
		if _, err := q.exec(ctx, `UPDATE webhooks SET is_active = $1, disabled_reason = $2, last_error = $3, updated_at = $4
			WHERE id = $5`, false, domain.DisabledGone, nullStr(r.Error), at, job.WebhookID); err != nil {
			return err
		}
		return cancelPending(ctx, q, job.WebhookID, job.ID, cancelGone)
	case r.Status == domain.DeliveryPending:
		_, err := q.exec(ctx, `UPDATE webhooks SET last_error = $1 WHERE id = $2`, nullStr(r.Error), job.WebhookID)
		return err
	}
	var start int64
	var failures int
	if err := q.queryRow(ctx, `UPDATE webhooks SET last_error = $1, streak_started_at = COALESCE(streak_started_at, $2),
		streak_failures = streak_failures + 1 WHERE id = $3 RETURNING streak_started_at, streak_failures`,
		nullStr(r.Error), at, job.WebhookID).Scan(&start, &failures); err != nil {
		return err
	}
	if r.Deactivate == nil || !r.Deactivate(domain.FromMillis(start), failures) {
		return nil
	}
	if _, err := q.exec(ctx, `UPDATE webhooks SET is_active = $1, disabled_reason = $2, updated_at = $3 WHERE id = $4`,
		false, domain.DisabledFailures, at, job.WebhookID); err != nil {
		return err
	}
	return cancelPending(ctx, q, job.WebhookID, job.ID, cancelFailures)
}

// nullInt turns an optional int into a nullable value.
func nullInt(n *int) any {
	if n == nil {
		return nil
	}
	return *n
}
