package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/store"
)

// The outbox: one bursts row per person with changes not yet delivered,
// written by the person write path in the write's own transaction
// (recordChange), so no acknowledged change is lost and a rolled-back write
// fires nothing. Workers claim due rows here and close them.

// ClaimBursts leases due bursts. The lease conditions are repeated outside
// the subquery so that PostgreSQL re-checks them on the row it finally
// updates; SKIP LOCKED lets concurrent claimers pass over each other's rows.
func (s *Store) ClaimBursts(ctx context.Context, now time.Time, lease time.Duration, limit int) (_ []domain.Burst, err error) {
	defer named("ClaimBursts", &err)
	n := now.UnixMilli()
	if err := s.handBack(ctx, "bursts"); err != nil {
		return nil, err
	}
	if due, err := s.anyDue(ctx, `SELECT 1 FROM bursts WHERE due_at <= $1 AND (lease_until IS NULL OR lease_until <= $2) LIMIT 1`, n); !due || err != nil {
		return nil, err
	}
	token := domain.RandomHex(16)
	var out []domain.Burst
	err = s.writeQuery(ctx, func(rows *sql.Rows) error {
		out = out[:0]
		for rows.Next() {
			b := domain.Burst{LeaseToken: token}
			var due int64
			if err := rows.Scan(&b.PersonID, &b.AccountID, &b.Event, &due); err != nil {
				return err
			}
			b.DueAt = domain.FromMillis(due)
			out = append(out, b)
		}
		return rows.Err()
	}, `UPDATE bursts SET lease_until = $1, lease_token = $2
		WHERE person_id IN (SELECT person_id FROM bursts
			WHERE due_at <= $3 AND (lease_until IS NULL OR lease_until <= $4)
			ORDER BY due_at LIMIT $5`+s.dialect.ClaimRows+`)
		AND due_at <= $6 AND (lease_until IS NULL OR lease_until <= $7)
		RETURNING person_id, account_id, event, due_at`,
		now.Add(lease).UnixMilli(), token, n, n, limit, n, n)
	if s.loseClaim != nil {
		err = s.loseClaim(err)
	}
	if err != nil {
		s.lost.lost("bursts", token)
		return nil, err
	}
	return out, nil
}

// CloseBurst turns a claimed burst into deliveries, or hands it back when a
// change moved its due time after the claim, as service.CloseBurst decides
// on the row locked under the claim's lease.
func (s *Store) CloseBurst(ctx context.Context, b domain.Burst, build store.DeliveryBuilder) (_ bool, err error) {
	defer named("CloseBurst", &err)
	closed := false
	err = s.inTx(ctx, func(q querier) error {
		var err error
		if closed, err = settleBurst(ctx, q, b); err != nil || !closed {
			return err
		}
		if build == nil {
			return nil
		}
		active, err := activeSubscriptions(ctx, q, []string{b.AccountID}, q.s.dialect.ShareRows)
		if err != nil {
			return err
		}
		deliveries, err := build(active[b.AccountID])
		if err != nil {
			return err
		}
		for _, d := range deliveries {
			if err := insertDelivery(ctx, q, d); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	return closed, nil
}

// CloseBursts closes many claimed bursts in one transaction, each as
// CloseBurst does, but for a burst whose row a writer holds, which it
// passes over (closed false) rather than wait for (see lockBursts). The
// bursts are locked in person order, then the subscriptions of their
// accounts in id order (FOR SHARE, as CloseBurst).
func (s *Store) CloseBursts(ctx context.Context, bursts []domain.Burst, build store.BurstBuilder) (_ []bool, err error) {
	defer named("CloseBursts", &err)
	order := make([]int, len(bursts))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(bursts[a].PersonID, bursts[b].PersonID) })
	var closed []bool
	err = s.inTx(ctx, func(q querier) error {
		sorted := make([]domain.Burst, len(order))
		for k, i := range order {
			sorted[k] = bursts[i]
		}
		settled, err := settleBursts(ctx, q, sorted, q.s.dialect.ClaimRows)
		if err != nil {
			return err
		}
		closed = make([]bool, len(bursts))
		var deliver []int
		accounts := map[string]bool{}
		for k, i := range order {
			if !settled[k] {
				continue
			}
			closed[i] = true
			deliver = append(deliver, i)
			accounts[bursts[i].AccountID] = true
		}
		if build == nil || len(deliver) == 0 {
			return nil
		}
		active, err := activeSubscriptions(ctx, q, slices.Sorted(maps.Keys(accounts)), q.s.dialect.ShareRows)
		if err != nil {
			return err
		}
		var rows []domain.DeliveryJob
		for _, i := range deliver {
			ds, err := build(bursts[i], active[bursts[i].AccountID])
			if err != nil {
				return err
			}
			rows = append(rows, ds...)
		}
		for chunk := range slices.Chunk(rows, finishChunk) {
			if err := insertDeliveries(ctx, q, chunk); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return closed, nil
}

// settleBurst decides on a claimed burst as service.CloseBurst does, on its
// row locked under the claim's lease, and writes the decision: hand it back
// (a change moved its due time after the claim), open the next burst, or
// delete it. It reports whether the burst closed into deliveries; false
// also when the lease ran out and another worker holds the burst.
func settleBurst(ctx context.Context, q querier, b domain.Burst) (bool, error) {
	ok, err := settleBursts(ctx, q, []domain.Burst{b}, q.s.dialect.LockRows)
	if err != nil {
		return false, err
	}
	return ok[0], nil
}

// settleBursts settles claimed bursts (in person order) as settleBurst
// settles each, with a statement per claim's token to lock them and one
// per chunk to delete the closed ones, not two per burst: on SQLite every
// statement of a closing batch holds the one writer.
func settleBursts(ctx context.Context, q querier, bs []domain.Burst, lock string) ([]bool, error) {
	cur, err := lockBursts(ctx, q, bs, lock)
	if err != nil {
		return nil, err
	}
	out := make([]bool, len(bs))
	var del []any
	for i, b := range bs {
		c := cur[b.PersonID]
		if c == nil || c.token != b.LeaseToken {
			continue
		}
		decision := service.CloseBurst(c.Burst, b.DueAt)
		switch {
		case !decision.Deliver:
			_, err = q.exec(ctx, `UPDATE bursts SET lease_until = NULL, lease_token = NULL WHERE person_id = $1 AND lease_token = $2`,
				b.PersonID, b.LeaseToken)
		case decision.Next != nil:
			next := decision.Next
			_, err = q.exec(ctx, `UPDATE bursts SET event = $1, opened_at = $2, last_change_at = $3, due_at = $4,
			next_opened_at = NULL, next_due_at = NULL, lease_until = NULL, lease_token = NULL WHERE person_id = $5`,
				next.Event, next.OpenedAt.UnixMilli(), next.LastChangeAt.UnixMilli(), next.DueAt.UnixMilli(), b.PersonID)
			out[i] = true
		default:
			del = append(del, b.PersonID)
			out[i] = true
		}
		if err != nil {
			return nil, err
		}
	}
	for chunk := range slices.Chunk(del, finishChunk) {
		var a sqlArgs
		if _, err := q.exec(ctx, `DELETE FROM bursts WHERE person_id IN (`+a.list(chunk...)+`)`, a...); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// lockedBurst is a burst row as lockBursts read it.
type lockedBurst struct {
	service.Burst
	token string
}

// lockBursts reads and locks, as lock says, the outbox rows of the bursts
// (in person order) that their claims' leases still hold, grouped by lease
// token (one group when the bursts come from one claim). A batch's close
// passes over the rows a writer holds (ClaimRows, SKIP LOCKED), as if
// their leases had run out: holding many rows, it must not wait for one,
// since a writer that holds it may wait for another of them (an import
// holds the outbox rows of its persons until it commits). A close of one
// burst waits for its row (LockRows), holding no other meanwhile.
func lockBursts(ctx context.Context, q querier, bs []domain.Burst, lock string) (map[string]*lockedBurst, error) {
	var tokens []string
	byToken := map[string][]any{}
	for _, b := range bs {
		if _, ok := byToken[b.LeaseToken]; !ok {
			tokens = append(tokens, b.LeaseToken)
		}
		byToken[b.LeaseToken] = append(byToken[b.LeaseToken], b.PersonID)
	}
	out := make(map[string]*lockedBurst, len(bs))
	for _, token := range tokens {
		for chunk := range slices.Chunk(byToken[token], finishChunk) {
			var a sqlArgs
			where := `person_id IN (` + a.list(chunk...) + `)`
			if token != "" {
				where += ` AND lease_token = ` + a.add(token)
			}
			rows, err := q.query(ctx, `SELECT person_id, event, opened_at, last_change_at, due_at, next_opened_at, next_due_at
				FROM bursts WHERE `+where+` ORDER BY person_id`+lock, a...)
			if err != nil {
				return nil, err
			}
			for rows.Next() {
				var (
					person              string
					b                   lockedBurst
					opened, last, due   int64
					nextOpened, nextDue sql.NullInt64
				)
				if err := rows.Scan(&person, &b.Event, &opened, &last, &due, &nextOpened, &nextDue); err != nil {
					rows.Close()
					return nil, err
				}
				b.OpenedAt, b.LastChangeAt, b.DueAt = domain.FromMillis(opened), domain.FromMillis(last), domain.FromMillis(due)
				b.NextOpenedAt, b.NextDueAt = timePtr(nextOpened), timePtr(nextDue)
				b.token = token
				out[person] = &b
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// ActiveSubscriptions reads the active subscriptions of the accounts, by
// account, each account's oldest first, without a lock.
func (s *Store) ActiveSubscriptions(ctx context.Context, accounts []string) (_ map[string][]domain.Webhook, err error) {
	defer named("ActiveSubscriptions", &err)
	return activeSubscriptions(ctx, s.reader(), slices.Sorted(slices.Values(accounts)), "")
}

// activeSubscriptions reads the active subscriptions of the accounts
// (sorted), locked as lock says in id order, and returns them by account,
// each account's oldest first. A close reads them FOR SHARE, which holds
// off a rotation until the deliveries made from them exist, so the
// rotation sees them when it decides whether the old secret is needed.
func activeSubscriptions(ctx context.Context, q querier, accounts []string, lock string) (map[string][]domain.Webhook, error) {
	out := map[string][]domain.Webhook{}
	for chunk := range slices.Chunk(accounts, finishChunk) {
		var a sqlArgs
		where := `account_id IN (` + a.list(anySlice(chunk)...) + `) AND is_active = ` + a.add(true)
		ws, err := queryAll(ctx, q, byValue(q.s.scanWebhook), `SELECT `+webhookColumns+` FROM webhooks WHERE `+where+
			` ORDER BY id`+lock, a...)
		if err != nil {
			return nil, err
		}
		for _, w := range ws {
			out[w.AccountID] = append(out[w.AccountID], w)
		}
	}
	for _, ws := range out {
		slices.SortFunc(ws, func(a, b domain.Webhook) int {
			if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
				return c
			}
			return strings.Compare(a.ID, b.ID)
		})
	}
	return out, nil
}

// insertDeliveries writes new deliveries, each leased to its maker when it
// carries a lease token: a claim that would follow at once would cost the
// single writer another transaction per batch and a scan of the due rows.
func insertDeliveries(ctx context.Context, q querier, jobs []domain.DeliveryJob) error {
	var a sqlArgs
	var b strings.Builder
	b.WriteString(`INSERT INTO deliveries (id, account_id, webhook_id, event, person_id, body, secret_version,
		status, attempts, round_start, next_attempt_at, created_at, lease_until, lease_token) VALUES `)
	for i, j := range jobs {
		if i > 0 {
			b.WriteString(", ")
		}
		d := j.Delivery
		var token any
		if j.LeaseToken != "" {
			token = j.LeaseToken
		}
		// attempts and round_start start at 0 for every delivery: literals,
		// not parameters (see stmtParams).
		b.WriteString("(" + a.list(d.ID, d.AccountID, d.WebhookID, d.Event, d.PersonID, string(d.Body), d.SecretVersion,
			d.Status) + ", 0, 0, " + a.list(nullMillis(d.NextAttemptAt), d.CreatedAt.UnixMilli(), nullMillis(d.LeaseUntil), token) + ")")
	}
	_, err := q.exec(ctx, b.String(), a...)
	return err
}

func insertDelivery(ctx context.Context, q querier, d domain.Delivery) error {
	_, err := q.exec(ctx, `INSERT INTO deliveries (id, account_id, webhook_id, event, person_id, body, secret_version,
		status, attempts, round_start, next_attempt_at, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 0, 0, $9, $10)`,
		d.ID, d.AccountID, d.WebhookID, d.Event, d.PersonID, string(d.Body), d.SecretVersion,
		d.Status, nullMillis(d.NextAttemptAt), d.CreatedAt.UnixMilli())
	return err
}

// anyDue runs a read-only probe (arguments: now, now) so that an idle
// worker's polls never take the write lock: on SQLite the one writer
// connection is the API's too.
func (s *Store) anyDue(ctx context.Context, probe string, now int64) (bool, error) {
	var one int
	err := s.reader().queryRow(ctx, probe, now, now).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}
