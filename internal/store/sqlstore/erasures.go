package sqlstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// Erasure. On PostgreSQL a person is erased in one transaction, whatever
// it holds: its writers run in parallel and the erasure holds only the
// person's row and what hangs from it. On SQLite every write holds the one
// write lock, so a person's breadcrumbs are deleted in chunks of
// Dialect.EraseChunk, each a transaction of its own that holds the lock
// about as long as a group commit's batch does; the last chunk's
// transaction also deletes the person and everything else held for it,
// records the erasure, its suppressions and its person.deleted deliveries.
// The first chunk that leaves breadcrumbs behind writes an erasure_purges
// row in its own commit: a crash between chunks leaves that row, and
// FinishErasures (run as the store opens) completes the erasure, so the
// person ends erased, never half. While the chunks run (briefly, even for
// a person with many breadcrumbs), a concurrent reader sees the person
// with fewer breadcrumbs, as it would see any write in progress; the
// erasure is answered only once the last chunk has committed.

// ErasePerson erases a person (see store.Erasures).
func (s *Store) ErasePerson(ctx context.Context, accountID, personID string, in domain.EraseRequest, w store.Write) (_ domain.Erasure, err error) {
	defer named("ErasePerson", &err)
	// The background fold would take the write lock between the chunks to
	// fold what they wrote; it folds it all once the erasure is done.
	s.folder.pause()
	defer s.folder.resume()
	for {
		var (
			rec  domain.Erasure
			done bool
		)
		err := s.inTxAlone(ctx, func(q querier) error {
			var err error
			rec, done, err = erasePart(ctx, q, accountID, personID, in, w.Now)
			return err
		})
		if err != nil || done {
			return rec, err
		}
	}
}

// erasePart runs one transaction of an erasure: a chunk of breadcrumbs
// and, once none is left, the rest (done).
func erasePart(ctx context.Context, q querier, accountID, personID string, in domain.EraseRequest, now time.Time) (domain.Erasure, bool, error) {
	// The person's row first (the lock order), locked as a DELETE would,
	// so that no new breadcrumb or link of it commits meanwhile.
	var lastSeen int64
	var email, externalID, fID, phone sql.NullString
	err := q.queryRow(ctx, `SELECT last_seen_at, email_norm, external_id, f_id, phone FROM persons
		WHERE account_id = $1 AND id = $2`+q.s.dialect.LockRows, accountID, personID).Scan(&lastSeen, &email, &externalID, &fID, &phone)
	if errors.Is(err, sql.ErrNoRows) {
		return domain.Erasure{}, false, notFoundOrMerged(ctx, q, accountID, personID)
	}
	if err != nil {
		return domain.Erasure{}, false, err
	}
	chunk := q.s.dialect.EraseChunk
	deleted, err := deleteBreadcrumbs(ctx, q, accountID, personID, chunk)
	if err != nil {
		return domain.Erasure{}, false, err
	}
	if chunk > 0 && deleted == chunk {
		_, err := q.exec(ctx, `INSERT INTO erasure_purges (account_id, person_id, key_id, suppress, started_at)
			VALUES ($1, $2, $3, $4, $5) ON CONFLICT (account_id, person_id) DO NOTHING`,
			accountID, personID, in.KeyID, in.Suppress, now.UnixMilli())
		return domain.Erasure{}, false, err
	}
	for _, stmt := range []string{
		`DELETE FROM person_tags WHERE person_id = $2 AND account_id = $1`,
		`DELETE FROM person_field_values WHERE person_id = $2 AND account_id = $1`,
		`DELETE FROM bursts WHERE person_id = $2 AND account_id = $1`,
		`DELETE FROM delivered_states WHERE person_id = $2 AND account_id = $1`,
		`DELETE FROM erasure_purges WHERE account_id = $1 AND person_id = $2`,
	} {
		if _, err := q.exec(ctx, stmt, accountID, personID); err != nil {
			return domain.Erasure{}, false, err
		}
	}
	// The subscriptions before the deliveries, FOR SHARE, as the worker's
	// close reads them after the outbox rows; a recorder locks them before
	// the deliveries too.
	subs, err := activeSubscriptions(ctx, q, []string{accountID}, q.s.dialect.ShareRows)
	if err != nil {
		return domain.Erasure{}, false, err
	}
	if err := eraseDeliveries(ctx, q, accountID, personID, now); err != nil {
		return domain.Erasure{}, false, err
	}
	if err := clearNamed(ctx, q, accountID, email, externalID, fID); err != nil {
		return domain.Erasure{}, false, err
	}
	aliased, merged, err := eraseMerged(ctx, q, accountID, personID, now)
	if err != nil {
		return domain.Erasure{}, false, err
	}
	if _, err := q.exec(ctx, `DELETE FROM persons WHERE account_id = $1 AND id = $2`, accountID, personID); err != nil {
		return domain.Erasure{}, false, err
	}
	if err := stampTombstone(ctx, q, accountID, personID, now); err != nil {
		return domain.Erasure{}, false, err
	}
	if _, err := q.exec(ctx, `INSERT INTO timeline_deltas (account_id, series, key, at_ms, n) VALUES ($1, 'persons', '', $2, -1)`,
		accountID, lastSeen); err != nil {
		return domain.Erasure{}, false, err
	}
	if in.Suppress {
		values := append(domain.SuppressedValues(strPtr(email), strPtr(externalID), strPtr(fID), strPtr(phone)), aliased...)
		if err := suppress(ctx, q, accountID, values, in.KeyID, now); err != nil {
			return domain.Erasure{}, false, err
		}
	}
	rec := domain.Erasure{ID: domain.NewID("ers"), PersonID: personID, KeyID: in.KeyID, At: now, Suppressed: in.Suppress}
	if _, err := q.exec(ctx, `INSERT INTO erasures (id, account_id, person_id, key_id, suppressed, erased_at)
		VALUES ($1, $2, $3, $4, $5, $6)`, rec.ID, accountID, personID, rec.KeyID, rec.Suppressed, now.UnixMilli()); err != nil {
		return domain.Erasure{}, false, err
	}
	// Each id merged into the person is erased with it: a record of its
	// own, which a redelivery asks for as for the person's (the deliveries
	// made for it before its merge carry markers now and are never sent
	// again), not listed (erased_with names the erasure asked for).
	for _, id := range merged {
		if _, err := q.exec(ctx, `INSERT INTO erasures (id, account_id, person_id, key_id, suppressed, erased_at, erased_with)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, domain.NewID("ers"), accountID, id, rec.KeyID, rec.Suppressed, now.UnixMilli(), personID); err != nil {
			return domain.Erasure{}, false, err
		}
	}
	return rec, true, announceErasure(ctx, q, subs[accountID], accountID, personID, now)
}

// eraseMerged erases what the person holds of the persons merged into it
// (person_merge.go): its aliases, cleared from every breadcrumb naming
// them as the person's own identifiers are, the records of the ids merged
// into it (which then answer a plain 404), and the deliveries made for
// those ids before their merge, as the person's own. It returns the
// aliases as values to suppress, should the erasure suppress, and the ids
// merged into the person.
func eraseMerged(ctx context.Context, q querier, accountID, personID string, now time.Time) ([]domain.SuppressedValue, []string, error) {
	aliases, err := aliasesOf(ctx, q, accountID, personID)
	if err != nil {
		return nil, nil, err
	}
	var values []domain.SuppressedValue
	for _, a := range aliases {
		var named [3]sql.NullString
		k := slices.Index(domain.AliasKinds, a.Kind)
		if k < 0 {
			return nil, nil, fmt.Errorf("sqlstore: an alias of kind %q", a.Kind)
		}
		named[k] = sql.NullString{String: a.Value, Valid: true}
		if err := clearNamed(ctx, q, accountID, named[1], named[0], named[2]); err != nil {
			return nil, nil, err
		}
		values = append(values, domain.SuppressedValues(strPtr(named[1]), strPtr(named[0]), strPtr(named[2]), nil)...)
	}
	merged, err := queryAll(ctx, q, scanString, `SELECT person_id FROM person_merges WHERE account_id = $1 AND merged_into = $2
		ORDER BY person_id`, accountID, personID)
	if err != nil {
		return nil, nil, err
	}
	for _, id := range merged {
		if err := eraseDeliveries(ctx, q, accountID, id, now); err != nil {
			return nil, nil, err
		}
	}
	for _, stmt := range []string{
		`DELETE FROM person_aliases WHERE account_id = $1 AND person_id = $2`,
		`DELETE FROM person_merges WHERE account_id = $1 AND merged_into = $2`,
	} {
		if _, err := q.exec(ctx, stmt, accountID, personID); err != nil {
			return nil, nil, err
		}
	}
	return values, merged, nil
}

// deleteBreadcrumbs deletes up to chunk of the person's breadcrumbs (all
// when chunk is 0), oldest first, with the timeline deltas that keep the
// counts exact: one per millisecond (and flavor), not one per row. A chunk
// ends at its last row's place in the person's index (breadcrumbs_person),
// so each statement reads that range alone.
func deleteBreadcrumbs(ctx context.Context, q querier, accountID, personID string, chunk int) (int, error) {
	where := `account_id = $1 AND person_id = $2`
	args := []any{accountID, personID}
	if chunk > 0 {
		var lastAt int64
		var lastID string
		err := q.queryRow(ctx, `SELECT activity_at, id FROM breadcrumbs WHERE account_id = $1 AND person_id = $2
			ORDER BY activity_at, id LIMIT 1 OFFSET `+strconv.Itoa(chunk-1), accountID, personID).Scan(&lastAt, &lastID)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			// Fewer than a chunk: all of them.
		case err != nil:
			return 0, err
		default:
			where += ` AND (activity_at < $3 OR (activity_at = $3 AND id <= $4))`
			args = append(args, lastAt, lastID)
		}
	}
	if _, err := q.exec(ctx, `INSERT INTO timeline_deltas (account_id, series, key, at_ms, n)
		SELECT $1, 'breadcrumbs', '', activity_at, -COUNT(*) FROM breadcrumbs WHERE `+where+` GROUP BY activity_at
		UNION ALL
		SELECT $1, 'breadcrumbs', flavor, activity_at, -COUNT(*) FROM breadcrumbs WHERE `+where+` GROUP BY flavor, activity_at`,
		args...); err != nil {
		return 0, err
	}
	res, err := q.exec(ctx, `DELETE FROM breadcrumbs WHERE `+where, args...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// clearNamed clears the erased person's identifiers (its own breadcrumbs
// are deleted already) from every breadcrumb of the account that names
// them, whoever holds it: a breadcrumb matched to another person by one
// identifier keeps that person, and that identifier, but not the erased
// person's. Each is found by its index (breadcrumbs_email, migration
// 00220), in the normal form both are stored in (migration 00210).
func clearNamed(ctx context.Context, q querier, accountID string, email, externalID, fID sql.NullString) error {
	for _, c := range []struct {
		column string
		v      sql.NullString
	}{{"email", email}, {"external_id", externalID}, {"f_id", fID}} {
		if !c.v.Valid || c.v.String == "" {
			continue
		}
		if _, err := q.exec(ctx, `UPDATE breadcrumbs SET `+c.column+` = NULL WHERE account_id = $1 AND `+c.column+` = $2`,
			accountID, c.v.String); err != nil {
			return err
		}
	}
	return nil
}

// eraseDeliveries cancels the person's pending deliveries (those never
// attempted go, the others fail with ErasedDeliveryError) and replaces
// the stored body of every delivery that carried it, and the request
// headers of every attempt, by markers: the log keeps each delivery's
// status, time and answer code, nothing of the person.
func eraseDeliveries(ctx context.Context, q querier, accountID, personID string, now time.Time) error {
	const ofPerson = `webhook_id IN (SELECT id FROM webhooks WHERE account_id = $1) AND person_id = $2`
	if _, err := q.exec(ctx, `DELETE FROM deliveries WHERE `+ofPerson+` AND status = $3 AND attempts = 0`,
		accountID, personID, domain.DeliveryPending); err != nil {
		return err
	}
	if _, err := q.exec(ctx, `UPDATE deliveries SET status = $3, last_error = $4, next_attempt_at = NULL,
		lease_until = NULL, lease_token = NULL WHERE `+ofPerson+` AND status = $5`,
		accountID, personID, domain.DeliveryFailed, domain.ErasedDeliveryError, domain.DeliveryPending); err != nil {
		return err
	}
	type carried struct {
		id, event string
		created   int64
	}
	rows, err := queryAll(ctx, q, func(sc scanner) (carried, error) {
		var c carried
		err := sc.Scan(&c.id, &c.event, &c.created)
		return c, err
	}, `SELECT id, event, created_at FROM deliveries WHERE `+ofPerson, accountID, personID)
	if err != nil {
		return err
	}
	headers := encodeHeaders(domain.ErasedHeaders)
	for _, d := range rows {
		body, err := domain.DeletedBody(d.id, d.event, domain.FromMillis(d.created), personID, now)
		if err != nil {
			return err
		}
		if _, err := q.exec(ctx, `UPDATE deliveries SET body = $1 WHERE id = $2`, string(body), d.id); err != nil {
			return err
		}
		if _, err := q.exec(ctx, `UPDATE delivery_attempts SET request_headers = $1 WHERE delivery_id = $2`, headers, d.id); err != nil {
			return err
		}
	}
	return nil
}

// announceErasure queues one person.deleted delivery for each of the
// account's active subscriptions that lists the event, due at once: the
// worker signs and sends it as any other.
func announceErasure(ctx context.Context, q querier, subs []domain.Webhook, accountID, personID string, now time.Time) error {
	for _, sub := range subs {
		if !sub.Wants(domain.EventPersonDeleted) {
			continue
		}
		id := domain.NewDeliveryID()
		body, err := domain.DeletedBody(id, domain.EventPersonDeleted, now, personID, now)
		if err != nil {
			return err
		}
		if sub.IncludeChanges {
			body = domain.WithChanges(body, nil)
		}
		due := now
		if err := insertDelivery(ctx, q, domain.Delivery{ID: id, AccountID: accountID, WebhookID: sub.ID,
			Event: domain.EventPersonDeleted, PersonID: personID, Body: body, SecretVersion: sub.SecretVersion,
			Status: domain.DeliveryPending, NextAttemptAt: &due, CreatedAt: now}); err != nil {
			return err
		}
	}
	return nil
}

// suppress keeps the values as keyed hashes under the account's secret,
// made now if the account has none yet.
func suppress(ctx context.Context, q querier, accountID string, values []domain.SuppressedValue, keyID string, now time.Time) error {
	if len(values) == 0 {
		return nil
	}
	fresh := make([]byte, 32)
	if _, err := rand.Read(fresh); err != nil {
		return err
	}
	sealed, err := q.s.sealer.Seal(fresh, suppressionPlace(accountID))
	if err != nil {
		return err
	}
	if _, err := q.exec(ctx, `INSERT INTO suppression_secrets (account_id, secret) VALUES ($1, $2)
		ON CONFLICT (account_id) DO NOTHING`, accountID, sealed); err != nil {
		return err
	}
	delete(q.noSecret, accountID)
	var secret []byte
	if err := q.queryRow(ctx, `SELECT secret FROM suppression_secrets WHERE account_id = $1`, accountID).Scan(&secret); err != nil {
		return err
	}
	if secret, err = q.s.sealer.Open(secret, suppressionPlace(accountID)); err != nil {
		return err
	}
	for _, v := range values {
		if _, err := q.exec(ctx, `INSERT INTO suppressions (id, account_id, kind, hash, key_id, created_at)
			VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (account_id, hash) DO NOTHING`,
			domain.NewID("sup"), accountID, v.Kind, domain.SuppressionHash(secret, v), keyID, now.UnixMilli()); err != nil {
			return err
		}
	}
	return nil
}

// FinishErasures completes the erasures a crash interrupted between
// chunks (an erasure_purges row left behind), as each asked.
func (s *Store) FinishErasures(ctx context.Context, now time.Time) (err error) {
	defer named("FinishErasures", &err)
	type purge struct {
		account, person, key string
		suppress             bool
	}
	left, err := queryAll(ctx, s.reader(), func(sc scanner) (purge, error) {
		var p purge
		err := sc.Scan(&p.account, &p.person, &p.key, &p.suppress)
		return p, err
	}, `SELECT account_id, person_id, key_id, suppress FROM erasure_purges ORDER BY started_at`)
	if err != nil {
		return err
	}
	for _, p := range left {
		_, err := s.ErasePerson(ctx, p.account, p.person, domain.EraseRequest{Suppress: p.suppress, KeyID: p.key}, store.Write{Now: now})
		if errors.Is(err, domain.ErrNotFound) {
			// Another run finished it; its row went with the person.
			_, err = s.writer().exec(ctx, `DELETE FROM erasure_purges WHERE account_id = $1 AND person_id = $2`, p.account, p.person)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// ListSuppressions returns a page of the account's suppressions, newest first.
func (s *Store) ListSuppressions(ctx context.Context, accountID string, p domain.PageRequest) (_ []domain.Suppression, _ int, err error) {
	defer named("ListSuppressions", &err)
	return safePage(ctx, s, func(q querier) ([]domain.Suppression, int, error) {
		return listPage(ctx, q, `id, kind, hash, created_at, key_id`, `suppressions WHERE account_id = $1`,
			`created_at DESC, id DESC`, []any{accountID}, p, scanSuppression)
	})
}

func scanSuppression(sc scanner) (domain.Suppression, error) {
	var x domain.Suppression
	var at int64
	err := sc.Scan(&x.ID, &x.Kind, &x.Hash, &at, &x.KeyID)
	x.CreatedAt = domain.FromMillis(at)
	return x, err
}

// FindSuppressions returns the suppressions of one identifier: its
// forms hashed under the account's secret, looked up by the unique index
// of (account_id, hash). An account without a secret suppressed nothing.
func (s *Store) FindSuppressions(ctx context.Context, accountID string, values []domain.SuppressedValue) (_ []domain.Suppression, err error) {
	defer named("FindSuppressions", &err)
	q := s.reader()
	secret, err := s.suppressionSecret(ctx, q, accountID)
	if err != nil || secret == nil || len(values) == 0 {
		return []domain.Suppression{}, err
	}
	var args sqlArgs
	account := args.add(accountID)
	hashes := make([]any, len(values))
	for i, v := range values {
		hashes[i] = domain.SuppressionHash(secret, v)
	}
	return queryAll(ctx, q, scanSuppression, `SELECT id, kind, hash, created_at, key_id FROM suppressions WHERE account_id = `+account+
		` AND hash IN (`+args.list(hashes...)+`) ORDER BY created_at DESC, id DESC`, args...)
}

// DeleteSuppression lifts one suppression.
func (s *Store) DeleteSuppression(ctx context.Context, accountID, id string) (err error) {
	defer named("DeleteSuppression", &err)
	res, err := s.writer().exec(ctx, `DELETE FROM suppressions WHERE account_id = $1 AND id = $2`, accountID, id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return domain.NotFound("suppression", id)
	}
	return nil
}

// ListErasures returns a page of the account's erasures, newest first:
// those asked for, not the records of the ids merged into an erased
// person (erased_with), which it erased with it.
func (s *Store) ListErasures(ctx context.Context, accountID string, p domain.PageRequest) (_ []domain.Erasure, _ int, err error) {
	defer named("ListErasures", &err)
	return safePage(ctx, s, func(q querier) ([]domain.Erasure, int, error) {
		return listPage(ctx, q, `id, person_id, key_id, erased_at, suppressed`, `erasures WHERE account_id = $1 AND erased_with IS NULL`,
			`erased_at DESC, id DESC`, []any{accountID}, p, func(sc scanner) (domain.Erasure, error) {
				var e domain.Erasure
				var at int64
				err := sc.Scan(&e.ID, &e.PersonID, &e.KeyID, &at, &e.Suppressed)
				e.At = domain.FromMillis(at)
				return e, err
			})
	})
}
