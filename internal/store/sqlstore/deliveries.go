package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// The statuses as SQL literals. The partial indexes of migration 00190
// hold only pending deliveries, or only finished ones, and a planner applies
// such an index only to a query that names the same literal: a bound
// parameter could be any status.
const (
	pendingSQL  = `'` + domain.DeliveryPending + `'`
	finishedSQL = `('` + domain.DeliverySucceeded + `', '` + domain.DeliveryFailed + `')`
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

// ListDeliveries pages a subscription's deliveries that f lets through,
// newest first, in one read snapshot, so that the total and the page agree
// and a page past the middle is read from the far end (pageOf). Every
// condition but the subscription's is on a column that leads an index after
// webhook_id (migration 00110), so a filtered log is counted in that index
// alone.
func (s *Store) ListDeliveries(ctx context.Context, accountID, webhookID string, f domain.DeliveryFilter, p domain.PageRequest) (out []domain.Delivery, total int, err error) {
	defer named("ListDeliveries", &err)
	scan := func(sc scanner) (*domain.Delivery, error) { return scanDelivery(sc) }
	err = s.safeReadTx(ctx, func(q querier) error {
		if _, err := getWebhook(ctx, q, accountID, webhookID); err != nil {
			return err
		}
		var args sqlArgs
		where := ofSubscription(&args, accountID, webhookID) + filtered(&args, "d.", f)
		out, total, err = listPage(ctx, q, deliveryColumns, `deliveries d WHERE `+where, `d.created_at DESC, d.id DESC`, args, p, byValue(scan))
		return err
	})
	return out, total, err
}

// filtered is the conditions of f on deliveries (columns named with
// prefix), each after an AND: the log's filters, and the deliveries Redeliver
// Failed selects, so that it queues what the log counts.
func filtered(args *sqlArgs, prefix string, f domain.DeliveryFilter) string {
	var where string
	for _, eq := range []struct{ column, value string }{{"status", f.Status}, {"event", f.Event}, {"person_id", f.PersonID}} {
		if eq.value != "" {
			where += ` AND ` + prefix + eq.column + ` = ` + args.add(eq.value)
		}
	}
	if f.Since != nil {
		where += ` AND ` + prefix + `created_at >= ` + args.add(ceilMillis(*f.Since))
	}
	if f.Until != nil {
		where += ` AND ` + prefix + `created_at <= ` + args.add(f.Until.UnixMilli())
	}
	return where
}

// ofSubscription is the condition that keeps deliveries d to one
// subscription of the account. The account is checked on the webhooks row,
// once per statement, rather than on each delivery: d.account_id is in no
// index the log reads, and a condition on it would send a count to every
// row the index finds. A delivery's account is always its subscription's.
func ofSubscription(args *sqlArgs, accountID, webhookID string) string {
	return `d.webhook_id = (SELECT w.id FROM webhooks w WHERE w.id = ` + args.add(webhookID) +
		` AND w.account_id = ` + args.add(accountID) + `)`
}

func getDelivery(ctx context.Context, q querier, accountID, webhookID, id string) (*domain.Delivery, error) {
	var body string
	d, err := scanDelivery(q.queryRow(ctx, `SELECT `+deliveryColumns+`, d.body FROM deliveries d
		WHERE d.id = $1 AND d.webhook_id = $2 AND d.account_id = $3`, id, webhookID, accountID), &body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, domain.NotFound("delivery", id)
	}
	if err != nil {
		return nil, err
	}
	d.Body = json.RawMessage(body)
	return d, nil
}

func scanDeliveryRow(r *row, id string) (*domain.Delivery, error) {
	d, err := scanDelivery(r)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, domain.NotFound("delivery", id)
	}
	return d, err
}

// GetDelivery returns a delivery of the subscription with its attempts.
func (s *Store) GetDelivery(ctx context.Context, accountID, webhookID, id string) (_ *domain.Delivery, _ []domain.DeliveryAttempt, err error) {
	defer named("GetDelivery", &err)
	var (
		d        *domain.Delivery
		attempts []domain.DeliveryAttempt
	)
	err = s.safeRead(ctx, func(q querier) (err error) {
		if _, err := getWebhook(ctx, q, accountID, webhookID); err != nil {
			return err
		}
		if d, err = getDelivery(ctx, q, accountID, webhookID, id); err != nil {
			return err
		}
		attempts, err = queryAll(ctx, q, scanAttempt, `SELECT attempt, attempted_at, status_code, error, duration_ms, request_headers
			FROM delivery_attempts WHERE delivery_id = $1 ORDER BY attempt`, id)
		return err
	})
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
	var headers string
	if err := sc.Scan(&a.Attempt, &at, &code, &msg, &a.DurationMS, &headers); err != nil {
		return a, err
	}
	if err := json.Unmarshal([]byte(headers), &a.RequestHeaders); err != nil {
		return a, fmt.Errorf("delivery attempt %d: request headers: %w", a.Attempt, err)
	}
	// Migration 00140 redacted what was recorded before; this covers an
	// attempt an instance of an earlier version records meanwhile.
	a.RequestHeaders = domain.RedactSignatures(a.RequestHeaders)
	a.AttemptedAt, a.Error = domain.FromMillis(at), strPtr(msg)
	if code.Valid {
		c := int(code.Int64)
		a.StatusCode = &c
	}
	return a, nil
}

// Redeliver queues a delivery again under its id.
func (s *Store) Redeliver(ctx context.Context, accountID, webhookID, id string, now time.Time) (_ *domain.Delivery, err error) {
	defer named("Redeliver", &err)
	var out *domain.Delivery
	err = s.inTx(ctx, func(q querier) error {
		w, err := lockWebhook(ctx, q, accountID, webhookID)
		if err != nil {
			return err
		}
		d, err := scanDeliveryRow(q.queryRow(ctx, `SELECT `+deliveryColumns+` FROM deliveries d
			WHERE d.id = $1 AND d.webhook_id = $2`+q.s.dialect.LockRows, id, w.ID), id)
		if err != nil {
			return err
		}
		if err := redeliverable(w); err != nil {
			return err
		}
		if d.Event != domain.EventPersonDeleted {
			var erased bool
			if err := q.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM erasures WHERE account_id = $1 AND person_id = $2)`,
				accountID, d.PersonID).Scan(&erased); err != nil {
				return err
			}
			if erased {
				return &domain.ConflictError{Detail: "The person this delivery carried was erased; its body is no longer kept, and it is not sent again."}
			}
		}
		// The delivery is locked and there: requeue leaves it alone only
		// while an attempt of it is in flight.
		n, err := requeue(ctx, q, w, now, func(a *sqlArgs) string { return ` AND id = ` + a.add(id) })
		if err != nil {
			return err
		}
		if n == 0 {
			return &domain.ConflictError{Detail: "An attempt of this delivery is in progress; redeliver it once the attempt has finished."}
		}
		d.Status, d.RoundStart, d.SecretVersion, d.LeaseUntil = domain.DeliveryPending, d.Attempts, w.SecretVersion, nil
		d.NextAttemptAt = &now
		out = d
		return nil
	})
	return out, err
}

// RedeliverFailed queues again, as Redeliver does one, every failed
// delivery of the subscription created at or after since.
func (s *Store) RedeliverFailed(ctx context.Context, accountID, webhookID string, since, now time.Time) (_ int, err error) {
	defer named("RedeliverFailed", &err)
	var n int
	err = s.inTx(ctx, func(q querier) error {
		w, err := lockWebhook(ctx, q, accountID, webhookID)
		if err != nil {
			return err
		}
		if err := redeliverable(w); err != nil {
			return err
		}
		n, err = requeue(ctx, q, w, now, func(a *sqlArgs) string {
			return filtered(a, "", domain.DeliveryFilter{Status: domain.DeliveryFailed, Since: &since})
		})
		return err
	})
	return n, err
}

// redeliverable refuses a redelivery for an inactive subscription: nothing
// is queued while a subscription is inactive.
func redeliverable(w *domain.Webhook) error {
	if !w.IsActive {
		return &domain.ConflictError{Detail: `The subscription is inactive; reactivate it with PATCH {"is_active": true} before redelivering.`}
	}
	return nil
}

// requeue is a redelivery: the deliveries of the locked subscription w that
// where's conditions (each after an AND) select become pending, due at now, in a fresh round of the retry
// schedule (earlier attempts stay counted), signed with the current secret.
// A delivery whose attempt is in flight keeps its lease and is left alone,
// so that the attempt is recorded, and one of a person since erased is never
// sent again. It returns how many it queued.
func requeue(ctx context.Context, q querier, w *domain.Webhook, now time.Time, where func(a *sqlArgs) string) (int, error) {
	var a sqlArgs
	set := `status = ` + a.add(domain.DeliveryPending) + `, next_attempt_at = ` + a.add(now.UnixMilli()) +
		`, round_start = attempts, secret_version = ` + a.add(w.SecretVersion) + `, lease_until = NULL, lease_token = NULL`
	// Never a delivery of a person since erased (its body is a marker),
	// but for the person.deleted that announced the erasure.
	res, err := q.exec(ctx, `UPDATE deliveries SET `+set+` WHERE webhook_id = `+a.add(w.ID)+
		` AND (lease_until IS NULL OR lease_until <= `+a.add(now.UnixMilli())+`)`+
		` AND (event = `+a.add(domain.EventPersonDeleted)+` OR NOT EXISTS (SELECT 1 FROM erasures e
			WHERE e.account_id = deliveries.account_id AND e.person_id = deliveries.person_id))`+where(&a), a...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	return int(n), dropUnusedSecrets(ctx, q, w.ID)
}

// ClaimDeliveries leases due deliveries of active subscriptions (no local
// listener's) and returns them with their target and the secret of their
// version.
func (s *Store) ClaimDeliveries(ctx context.Context, now time.Time, lease time.Duration, limit int) (_ []domain.DeliveryJob, err error) {
	defer named("ClaimDeliveries", &err)
	return s.ClaimDeliveriesFairly(ctx, now, lease, store.DeliveryClaim{Limit: limit})
}

// claimScan is the most due deliveries, oldest first, among which one claim
// chooses; a subscription at its bound is left out before they are counted,
// so a backlog of one cannot hide the others' due work.
func claimScan(limit int) int { return max(4*limit, 200) }

// ClaimDeliveriesFairly leases due deliveries in turn across accounts and
// subscriptions, each subscription within its bound, and returns them with
// their target and the secret of their version.
func (s *Store) ClaimDeliveriesFairly(ctx context.Context, now time.Time, lease time.Duration, c store.DeliveryClaim) (_ []domain.DeliveryJob, err error) {
	defer named("ClaimDeliveriesFairly", &err)
	if c.Limit <= 0 {
		return nil, nil
	}
	per := c.PerSubscription
	if per <= 0 {
		per = c.Limit
	}
	n := now.UnixMilli()
	if err := s.handBack(ctx, "deliveries"); err != nil {
		return nil, err
	}
	if due, err := s.anyDue(ctx, `SELECT 1 FROM deliveries WHERE status = `+pendingSQL+`
		AND next_attempt_at <= $1 AND (lease_until IS NULL OR lease_until <= $2) LIMIT 1`, n); !due || err != nil {
		return nil, err
	}
	var full, partial []string
	for id, room := range c.Room {
		if room <= 0 {
			full = append(full, id)
		} else {
			partial = append(partial, id)
		}
	}
	slices.Sort(full)
	slices.Sort(partial)
	token := domain.RandomHex(16)
	var a sqlArgs
	set := `lease_until = ` + a.add(now.Add(lease).UnixMilli()) + `, lease_token = ` + a.add(token)
	inner := `d.status = ` + pendingSQL + ` AND d.next_attempt_at <= ` + a.add(n) +
		` AND (d.lease_until IS NULL OR d.lease_until <= ` + a.add(n) + `) AND w.is_active = ` + a.add(true) +
		` AND (w.local_listener = ` + a.add(false) + ` OR w.listener_host = ` + a.add(c.Host) + `)`
	if len(full) > 0 {
		inner += ` AND d.webhook_id NOT IN (` + a.list(anySlice(full)...) + `)`
	}
	scan := a.add(claimScan(c.Limit))
	capExpr := `CAST(` + a.add(per) + ` AS BIGINT)`
	if len(partial) > 0 {
		var b strings.Builder
		b.WriteString(`CASE r.webhook_id`)
		for _, id := range partial {
			b.WriteString(` WHEN ` + a.add(id) + ` THEN CAST(` + a.add(c.Room[id]) + ` AS BIGINT)`)
		}
		b.WriteString(` ELSE ` + capExpr + ` END`)
		capExpr = b.String()
	}
	limit := a.add(c.Limit)
	// The innermost select takes the oldest due deliveries of the
	// subscriptions below their bound (skipping rows another claimer has
	// locked); the next ranks them within their subscription, keeping no
	// more than its bound allows; the outer one ranks the rest within
	// their account, by that rank, so that a claim takes each account's
	// first delivery, then each account's second, and so on.
	pick := `SELECT f.id FROM (
			SELECT r.id, r.next_attempt_at,
				ROW_NUMBER() OVER (PARTITION BY r.account_id ORDER BY r.sub_rank, r.next_attempt_at, r.id) AS account_rank
			FROM (
				SELECT c.id, c.webhook_id, c.account_id, c.next_attempt_at,
					ROW_NUMBER() OVER (PARTITION BY c.webhook_id ORDER BY c.next_attempt_at, c.id) AS sub_rank
				FROM (
					SELECT d.id, d.webhook_id, d.account_id, d.next_attempt_at
					FROM deliveries d JOIN webhooks w ON w.id = d.webhook_id
					WHERE ` + inner + `
					ORDER BY d.next_attempt_at LIMIT ` + scan + s.dialect.ClaimDeliveryRows + `
				) c
			) r WHERE r.sub_rank <= ` + capExpr + `
		) f ORDER BY f.account_rank, f.next_attempt_at, f.id LIMIT ` + limit
	var jobs []domain.DeliveryJob
	err = s.inTx(ctx, func(q querier) error {
		// Reset: the committer may run this function again (see committer).
		jobs = nil
		// The lease is set by id alone: with the due condition checked
		// again on the outer rows, both planners drove the UPDATE from the
		// due index, matching every due delivery against the pick, so that
		// each claim of a backlog read all of it (TestHotQueryPlans). The
		// check is not needed: the pick runs in this statement, under the
		// one writer (SQLite), and locks what it picks, checking a row
		// changed meanwhile again (PostgreSQL's FOR UPDATE).
		res, err := q.exec(ctx, `UPDATE deliveries SET `+set+` WHERE id IN (`+pick+`)`, a...)
		if err != nil {
			return err
		}
		if claimed, _ := res.RowsAffected(); claimed == 0 {
			return nil
		}
		jobs, err = leasedJobs(ctx, q, token)
		return err
	})
	if err != nil {
		s.lost.lost("deliveries", token)
	}
	return jobs, err
}

// ReleaseDeliveries clears the leases the jobs still hold, one statement
// per claim that leased them.
func (s *Store) ReleaseDeliveries(ctx context.Context, jobs []domain.DeliveryJob) (err error) {
	defer named("ReleaseDeliveries", &err)
	byToken := map[string][]any{}
	var tokens []string
	for _, j := range jobs {
		if j.LeaseToken == "" {
			continue
		}
		if _, ok := byToken[j.LeaseToken]; !ok {
			tokens = append(tokens, j.LeaseToken)
		}
		byToken[j.LeaseToken] = append(byToken[j.LeaseToken], j.ID)
	}
	if len(tokens) == 0 {
		return nil
	}
	return s.inTx(ctx, func(q querier) error {
		for _, token := range tokens {
			var a sqlArgs
			query := `UPDATE deliveries SET lease_until = NULL, lease_token = NULL WHERE lease_token = ` + a.add(token) +
				` AND id IN (` + a.list(byToken[token]...) + `)`
			if _, err := q.exec(ctx, query, a...); err != nil {
				return err
			}
		}
		return nil
	})
}

// leasedJobs reads the deliveries a claim leased under token. A version
// older than the current one is signed with its retired secret, which is
// kept while a pending delivery needs it.
func leasedJobs(ctx context.Context, q querier, token string) ([]domain.DeliveryJob, error) {
	rows, err := q.query(ctx, `SELECT `+deliveryColumns+`, d.body, w.target_url,
			COALESCE(CASE WHEN d.secret_version = w.secret_version THEN w.secret ELSE ws.secret END, w.secret),
			w.local_listener, w.listener_host, w.signature_scheme, w.secret, w.previous_secret, w.previous_secret_until,
			w.headers, w.max_per_second
		FROM deliveries d JOIN webhooks w ON w.id = d.webhook_id
		LEFT JOIN webhook_secrets ws ON ws.webhook_id = d.webhook_id AND ws.version = d.secret_version
		WHERE d.lease_token = $1 ORDER BY d.next_attempt_at, d.id`, token)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var jobs []domain.DeliveryJob
	for rows.Next() {
		job := domain.DeliveryJob{LeaseToken: token}
		var body string
		var previous sql.NullString
		var previousUntil sql.NullInt64
		var headers sql.NullString
		d, err := scanDelivery(rows, &body, &job.TargetURL, &job.Secret, &job.LocalListener, &job.ListenerHost,
			&job.SignatureScheme, &job.CurrentSecret, &previous, &previousUntil, &headers, &job.MaxPerSecond)
		if err != nil {
			return nil, err
		}
		if job.Headers, err = q.s.openHeaders(d.WebhookID, headers); err != nil {
			return nil, err
		}
		job.Previous = retiredSecret(previous, previousUntil)
		if err := q.s.openWebhookSecrets(d.WebhookID, &job.CurrentSecret, job.Previous); err != nil {
			return nil, err
		}
		if job.Secret, err = q.s.openText(job.Secret, webhookPlace(d.WebhookID)); err != nil {
			return nil, err
		}
		d.Body = []byte(body)
		job.Delivery = *d
		jobs = append(jobs, job)
	}
	return jobs, rows.Err()
}

func anySlice[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// FinishAttempt records an attempt and what it means for the delivery and
// its subscription.
func (s *Store) FinishAttempt(ctx context.Context, job domain.DeliveryJob, r store.AttemptResult) (err error) {
	defer named("FinishAttempt", &err)
	return s.FinishAttempts(ctx, []store.FinishedAttempt{{Job: job, Result: r}})
}

// subState is what a batch of finished attempts knows of a locked
// subscription.
type subState struct {
	// clear: no failure streak and no last_error, so a success changes
	// nothing.
	clear bool
	// finished: a delivery of it finished, so its unused retired secrets
	// are dropped at the end.
	finished bool
	// active: is_active as locked, false once this batch deactivated it,
	// so that the account hears of a deactivation once.
	active bool
}

// deliveryState is a locked delivery as a batch of finished attempts
// found it, kept up to date as the batch records its attempts.
type deliveryState struct {
	token, status string
	attempts      int
	lastErr       sql.NullString
}

// finishChunk bounds the rows of one multi-row statement of a batch.
const finishChunk = 100

// FinishAttempts records attempts in one transaction. The subscription rows
// are locked before the delivery rows, each in id order, the order every
// transaction that touches both follows.
func (s *Store) FinishAttempts(ctx context.Context, done []store.FinishedAttempt) (err error) {
	defer named("FinishAttempts", &err)
	if len(done) == 0 {
		return nil
	}
	var subIDs, ids []any
	seenSub, seenID := map[string]bool{}, map[string]bool{}
	for _, f := range done {
		if !seenSub[f.Job.WebhookID] {
			seenSub[f.Job.WebhookID] = true
			subIDs = append(subIDs, f.Job.WebhookID)
		}
		if !seenID[f.Job.ID] {
			seenID[f.Job.ID] = true
			ids = append(ids, f.Job.ID)
		}
	}
	byString := func(a, b any) int { return strings.Compare(a.(string), b.(string)) }
	slices.SortFunc(subIDs, byString)
	slices.SortFunc(ids, byString)
	// Encoded before the transaction: on SQLite its statements hold the
	// one writer, which encoding would keep from the next commit.
	headers := make([]string, len(done))
	for i, f := range done {
		headers[i] = encodeHeaders(f.Result.Attempt.RequestHeaders)
	}
	return s.inTx(ctx, func(q querier) error {
		subs, err := lockSubscriptions(ctx, q, subIDs)
		if err != nil {
			return err
		}
		deliveries, err := lockDeliveries(ctx, q, ids)
		if err != nil {
			return err
		}
		var attemptRows [][]any
		tally := attemptTally{}
		updates := &deliveryUpdates{}
		for i, f := range done {
			job, r := f.Job, f.Result
			sub := subs[job.WebhookID]
			d := deliveries[job.ID]
			if sub == nil || d == nil || d.token != job.LeaseToken {
				continue // deleted while the attempt ran, or the lease passed to another worker
			}
			newStatus, next, lastErr := r.Status, r.NextAttemptAt, r.Error
			// Cancelled while in flight: the attempt is recorded, but only a
			// success changes the delivery, and the subscription is left alone.
			cancelled := d.status != domain.DeliveryPending
			if cancelled && r.Status != domain.DeliverySucceeded {
				newStatus, next, lastErr = d.status, nil, strPtr(d.lastErr)
			}
			d.attempts++
			updates.add(job.ID, deliveryUpdate{status: newStatus, code: nullable(r.Attempt.StatusCode), lastErr: nullable(lastErr), next: nullMillis(next)})
			d.status, d.token, d.lastErr = newStatus, "", toNullString(lastErr)
			attemptRows = append(attemptRows, []any{job.ID, d.attempts, r.Attempt.AttemptedAt.UnixMilli(),
				nullable(r.Attempt.StatusCode), nullable(r.Attempt.Error), r.Attempt.DurationMS, headers[i]})
			tally.add(job.WebhookID, r.Attempt)
			if !cancelled {
				if r.Status == domain.DeliveryFailed {
					// A failure may cancel the subscription's pending
					// deliveries, which must see the updates so far.
					if err := updates.flush(ctx, q); err != nil {
						return err
					}
				}
				cancelledOthers, err := applyToWebhook(ctx, q, job, r, sub)
				if err != nil {
					return err
				}
				if cancelledOthers {
					// The later attempts of this batch see what cancelling did.
					for _, g := range done[i+1:] {
						if g.Job.WebhookID != job.WebhookID || g.Job.ID == job.ID {
							continue
						}
						if o := deliveries[g.Job.ID]; o != nil {
							if err := q.queryRow(ctx, `SELECT status, last_error FROM deliveries WHERE id = $1`, g.Job.ID).
								Scan(&o.status, &o.lastErr); err != nil {
								return err
							}
						}
					}
				}
			}
			if newStatus != domain.DeliveryPending {
				sub.finished = true
			}
		}
		if err := updates.flush(ctx, q); err != nil {
			return err
		}
		for chunk := range slices.Chunk(attemptRows, finishChunk) {
			if err := insertAttempts(ctx, q, chunk); err != nil {
				return err
			}
		}
		if err := tally.write(ctx, q); err != nil {
			return err
		}
		for _, id := range subIDs {
			if sub := subs[id.(string)]; sub != nil && sub.finished {
				if err := dropUnusedSecrets(ctx, q, id.(string)); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// deliveryUpdate is what an attempt's record sets on its delivery (each
// value as bound: nil for NULL); attempts goes up by one.
type deliveryUpdate struct {
	status              string
	code, lastErr, next any
}

// deliveryUpdates collects the updates of a batch so that the deliveries
// set alike (every success with the same status code, for one) are set by
// one statement.
type deliveryUpdates struct {
	order []deliveryUpdate
	ids   map[deliveryUpdate][]any
}

func (u *deliveryUpdates) add(id string, v deliveryUpdate) {
	if u.ids == nil {
		u.ids = map[deliveryUpdate][]any{}
	}
	if _, ok := u.ids[v]; !ok {
		u.order = append(u.order, v)
	}
	u.ids[v] = append(u.ids[v], id)
}

func (u *deliveryUpdates) flush(ctx context.Context, q querier) error {
	for _, v := range u.order {
		for chunk := range slices.Chunk(u.ids[v], finishChunk) {
			var a sqlArgs
			set := `status = ` + a.add(v.status) + `, attempts = attempts + 1, last_status_code = ` + a.add(v.code) +
				`, last_error = ` + a.add(v.lastErr) + `, next_attempt_at = ` + a.add(v.next) + `, lease_until = NULL, lease_token = NULL`
			if _, err := q.exec(ctx, `UPDATE deliveries SET `+set+` WHERE id IN (`+a.list(chunk...)+`)`, a...); err != nil {
				return err
			}
		}
	}
	u.order, u.ids = nil, nil
	return nil
}

// lockSubscriptions reads and locks the subscriptions of ids (sorted).
func lockSubscriptions(ctx context.Context, q querier, ids []any) (map[string]*subState, error) {
	out := map[string]*subState{}
	for chunk := range slices.Chunk(ids, finishChunk) {
		var a sqlArgs
		rows, err := q.query(ctx, `SELECT id, streak_failures, last_error IS NULL, is_active FROM webhooks WHERE id IN (`+
			a.list(chunk...)+`) ORDER BY id`+q.s.dialect.LockRows, a...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id string
			var failures int
			var noErr, active bool
			if err := rows.Scan(&id, &failures, &noErr, &active); err != nil {
				rows.Close()
				return nil, err
			}
			out[id] = &subState{clear: failures == 0 && noErr, active: active}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// lockDeliveries reads and locks the deliveries of ids (sorted).
func lockDeliveries(ctx context.Context, q querier, ids []any) (map[string]*deliveryState, error) {
	out := map[string]*deliveryState{}
	for chunk := range slices.Chunk(ids, finishChunk) {
		var a sqlArgs
		rows, err := q.query(ctx, `SELECT id, lease_token, status, attempts, last_error FROM deliveries WHERE id IN (`+
			a.list(chunk...)+`) ORDER BY id`+q.s.dialect.LockRows, a...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id string
			var token sql.NullString
			d := &deliveryState{}
			if err := rows.Scan(&id, &token, &d.status, &d.attempts, &d.lastErr); err != nil {
				rows.Close()
				return nil, err
			}
			d.token = token.String
			out[id] = d
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func insertAttempts(ctx context.Context, q querier, rows [][]any) error {
	var a sqlArgs
	var b strings.Builder
	b.WriteString(`INSERT INTO delivery_attempts (delivery_id, attempt, attempted_at, status_code, error, duration_ms, request_headers) VALUES `)
	for i, r := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(" + a.list(r...) + ")")
	}
	_, err := q.exec(ctx, b.String(), a...)
	return err
}

// encodeHeaders stores request headers as a JSON object ({} for none),
// without a signature anyone could replay (domain.RedactSignatures).
func encodeHeaders(h map[string]string) string {
	if len(h) == 0 {
		return "{}"
	}
	b, _ := json.Marshal(domain.RedactSignatures(h)) // a map of strings always marshals
	return string(b)
}

func toNullString(s *string) sql.NullString {
	if s == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: *s, Valid: true}
}

// applyToWebhook carries an attempt's outcome to the subscription: a
// success ends the failure streak, a failed delivery extends it and may
// deactivate the subscription, 410 retires it. It reports whether it
// cancelled the subscription's other pending deliveries.
func applyToWebhook(ctx context.Context, q querier, job domain.DeliveryJob, r store.AttemptResult, sub *subState) (bool, error) {
	at := r.Attempt.AttemptedAt.UnixMilli()
	switch {
	case r.Status == domain.DeliverySucceeded:
		if sub.clear {
			return false, nil
		}
		sub.clear = true
		_, err := q.exec(ctx, `UPDATE webhooks SET streak_started_at = NULL, streak_failures = 0, last_error = NULL
			WHERE id = $1 AND (streak_failures <> 0 OR last_error IS NOT NULL)`, job.WebhookID)
		return false, err
	case r.Gone:
		sub.clear = false
		if _, err := q.exec(ctx, `UPDATE webhooks SET is_active = $1, disabled_reason = $2, last_error = $3, updated_at = $4
			WHERE id = $5`, false, domain.DisabledGone, nullable(r.Error), at, job.WebhookID); err != nil {
			return false, err
		}
		if err := sub.deactivated(ctx, q, job, at); err != nil {
			return false, err
		}
		return true, cancelPending(ctx, q, job.WebhookID, job.ID, cancelGone)
	case r.Status == domain.DeliveryPending:
		sub.clear = false
		_, err := q.exec(ctx, `UPDATE webhooks SET last_error = $1 WHERE id = $2`, nullable(r.Error), job.WebhookID)
		return false, err
	}
	sub.clear = false
	var start int64
	var failures int
	if err := q.queryRow(ctx, `UPDATE webhooks SET last_error = $1, streak_started_at = COALESCE(streak_started_at, $2),
		streak_failures = streak_failures + 1 WHERE id = $3 RETURNING streak_started_at, streak_failures`,
		nullable(r.Error), at, job.WebhookID).Scan(&start, &failures); err != nil {
		return false, err
	}
	if r.Deactivate == nil || !r.Deactivate(domain.FromMillis(start), failures) {
		return false, nil
	}
	if _, err := q.exec(ctx, `UPDATE webhooks SET is_active = $1, disabled_reason = $2, updated_at = $3 WHERE id = $4`,
		false, domain.DisabledFailures, at, job.WebhookID); err != nil {
		return false, err
	}
	if err := sub.deactivated(ctx, q, job, at); err != nil {
		return false, err
	}
	return true, cancelPending(ctx, q, job.WebhookID, job.ID, cancelFailures)
}
