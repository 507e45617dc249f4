package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// change is what a write did to a person.
type change int

const (
	// noChange: nothing to record (a tag already held, a PATCH with the
	// values the person has).
	noChange change = iota
	// upsertNoChange: an upsert matched and changed nothing; only
	// upsert_result says so.
	upsertNoChange
	// seenOnly: a breadcrumb for an existing person; date_last_seen moves,
	// no event.
	seenOnly
	// changed: an attribute, custom field value or tag changed.
	changed
	// createdNew: the write inserted the person (already stamped created,
	// seen now).
	createdNew
)

// writeAttempts bounds the retries of a person write that lost a race on a
// unique identifier (PostgreSQL with concurrent writers): the next attempt
// sees the winner's row and matches it or reports the conflict.
const writeAttempts = 3

// personWrite is the one write path of persons: every creation and change of
// a person, from every operation, runs fn in a transaction and records what
// fn reports it did in that same transaction (recordChange). When load is
// set the person is read back, inside the transaction, after the change.
func (s *Store) personWrite(ctx context.Context, accountID string, w store.Write, load bool,
	fn func(q querier) (personID string, c change, err error)) (*domain.Person, change, error) {
	var (
		p   *domain.Person
		c   change
		err error
	)
	for attempt := 1; attempt <= writeAttempts; attempt++ {
		err = s.inTx(ctx, func(q querier) error {
			id, ch, err := fn(q)
			if err != nil {
				return err
			}
			c = ch
			if err := recordChange(ctx, q, accountID, id, ch, w); err != nil {
				return err
			}
			if load {
				p, err = getPerson(ctx, q, accountID, id)
			}
			return err
		})
		if err == nil || !s.isUnique(err) {
			break
		}
	}
	return p, c, err
}

// recordChange stamps the person and, for a creation or a change, opens or
// extends its burst in the outbox. The burst keeps the event and opening time
// of the write that opened it: a burst that began with a creation is
// delivered as person.created however many changes follow inside its window.
// A change after the window closed (its due time passed, a worker has not
// taken it yet) does not reopen it: it opens or slides the next burst, which
// waits in next_opened_at/next_due_at and is always person.updated.
func recordChange(ctx context.Context, q querier, accountID, personID string, c change, w store.Write) error {
	now := w.Now.UnixMilli()
	var err error
	switch c {
	case noChange:
		return nil
	case upsertNoChange:
		_, err = q.exec(ctx, `UPDATE persons SET upsert_result = $1 WHERE account_id = $2 AND id = $3`,
			domain.UpsertUnchanged, accountID, personID)
		return err
	case seenOnly:
		_, err = q.exec(ctx, `UPDATE persons SET last_seen_at = $1 WHERE account_id = $2 AND id = $3`,
			now, accountID, personID)
		return err
	case changed:
		_, err = q.exec(ctx, `UPDATE persons SET last_seen_at = $1, upsert_result = $2 WHERE account_id = $3 AND id = $4`,
			now, domain.UpsertUpdated, accountID, personID)
		if err != nil {
			return err
		}
	}
	event := domain.EventPersonUpdated
	if c == createdNew {
		event = domain.EventPersonCreated
	}
	_, err = q.exec(ctx, `INSERT INTO bursts (person_id, account_id, event, opened_at, last_change_at, due_at, lease_until)
		VALUES ($1, $2, $3, $4, $5, $6, NULL)
		ON CONFLICT (person_id) DO UPDATE SET last_change_at = excluded.last_change_at,
			due_at = CASE WHEN bursts.due_at > excluded.last_change_at THEN excluded.due_at ELSE bursts.due_at END,
			next_opened_at = CASE WHEN bursts.due_at > excluded.last_change_at THEN bursts.next_opened_at
				ELSE COALESCE(bursts.next_opened_at, excluded.last_change_at) END,
			next_due_at = CASE WHEN bursts.due_at > excluded.last_change_at THEN bursts.next_due_at ELSE excluded.due_at END`,
		personID, accountID, event, now, now, w.Now.Add(w.Window).UnixMilli())
	return err
}

// PendingBurst reads the open burst of a person.
func (s *Store) PendingBurst(ctx context.Context, accountID, personID string) (*store.PersonBurst, error) {
	var b store.PersonBurst
	var opened, last, due int64
	err := s.reader().queryRow(ctx, `SELECT person_id, event, opened_at, last_change_at, due_at
		FROM bursts WHERE account_id = $1 AND person_id = $2`, accountID, personID).
		Scan(&b.PersonID, &b.Event, &opened, &last, &due)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, domain.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	b.OpenedAt, b.LastChangeAt, b.DueAt = domain.FromMillis(opened), domain.FromMillis(last), domain.FromMillis(due)
	return &b, nil
}
