package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/store"
)

// Merging duplicate persons. One transaction locks both persons in the
// lock order (by id; the merged person FOR UPDATE, as an erasure takes it,
// since it is deleted: a new breadcrumb or tag link of it waits, then
// finds it gone and runs again onto the survivor), moves what the merged
// person holds onto the survivor, deletes it and records the merge:
//
//   - person_aliases: its identifiers the survivor did not take, which the
//     holders' look-ups (holdersQuery) resolve to the survivor;
//   - person_merges: its id, for the 404 urn:pds:problem:merged and for
//     breadcrumbs naming it;
//   - its feed entry, made a tombstone by the delete, carries merged_into;
//   - one person.merged delivery per subscription listing the event.
//
// A chain (C, which absorbed B, merged into A) moves B's aliases and
// merge record on to A, so that each always names the current survivor,
// and moves B's tombstone, now naming A, to the end of the feed with C's:
// a follower that read B's tombstone naming C reads it again.
// The writes that create a person in one statement (createUnlessHeld,
// createMany) or match one outside a transaction cannot resolve an alias
// in that statement: an account with any alias is marked for them as one
// with a suppression is (suppressingMark), and its upserts run in their
// transactions, which do.

// mergeTextColumns are the nullable attribute columns a merge fills from
// the merged person where the survivor's are null (service.FillNull).
var mergeTextColumns = []string{"first_name", "last_name", "phone", "language", "pseudonym", "occupation",
	"age", "ethnicity", "income", "edu"}

// identifierColumns are the columns of the identifier kinds, in
// domain.AliasKinds order, as the unique indexes hold them.
var identifierColumns = [3]string{"external_id", "email_norm", "f_id"}

// mergeRow is what a merge reads of each of its persons.
type mergeRow struct {
	// ids are the identifiers in domain.AliasKinds order, normalized.
	ids                [3]sql.NullString
	email              sql.NullString
	text               []sql.NullString
	companies, address string
	emailOptOut        bool
	created, lastSeen  int64
}

// lockMergeRow locks and reads one person of a merge; nil when the account
// holds no such person.
func lockMergeRow(ctx context.Context, q querier, accountID, id, lock string) (*mergeRow, error) {
	r := &mergeRow{text: make([]sql.NullString, len(mergeTextColumns))}
	dest := []any{&r.ids[0], &r.ids[1], &r.ids[2], &r.email}
	for i := range r.text {
		dest = append(dest, &r.text[i])
	}
	dest = append(dest, &r.companies, &r.address, &r.emailOptOut, &r.created, &r.lastSeen)
	err := q.queryRow(ctx, `SELECT external_id, email_norm, f_id, email, `+strings.Join(mergeTextColumns, ", ")+`,
		companies, address, email_opt_out, created_at, last_seen_at FROM persons WHERE account_id = $1 AND id = $2`+lock,
		accountID, id).Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return r, err
}

// mergedInto is the survivor an id was merged into ("" when it was not).
func mergedInto(ctx context.Context, q querier, accountID, id string) (string, error) {
	var into string
	err := q.queryRow(ctx, `SELECT merged_into FROM person_merges WHERE account_id = $1 AND person_id = $2`, accountID, id).Scan(&into)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return into, err
}

// notFoundOrMerged is the error of a person the account does not hold: a
// *domain.MergedError when it was merged away, else a domain.NotFound.
func notFoundOrMerged(ctx context.Context, q querier, accountID, id string) error {
	into, err := mergedInto(ctx, q, accountID, id)
	switch {
	case err != nil:
		return err
	case into != "":
		return &domain.MergedError{PersonID: id, MergedInto: into}
	}
	return domain.NotFound("person", id)
}

// MergePersons merges fromID into survivorID (see store.Persons).
func (s *Store) MergePersons(ctx context.Context, accountID, survivorID, fromID string, w store.Write) (_ *domain.Person, err error) {
	defer named("MergePersons", &err)
	if err := service.CheckMerge(survivorID, fromID); err != nil {
		return nil, err
	}
	// The background fold would take the write lock for what a merge of
	// many breadcrumbs wrote; it folds once the merge is done.
	s.folder.pause()
	defer s.folder.resume()
	var p *domain.Person
	// A transaction of its own (alone on SQLite's group commit): it moves
	// every breadcrumb of the merged person, however many.
	err = s.retryingUnique(func() error {
		return s.inTxAlone(ctx, func(q querier) (err error) {
			p, err = mergeInTx(ctx, q, accountID, survivorID, fromID, w)
			return err
		})
	})
	return p, err
}

// mergeInTx is the merge's transaction.
func mergeInTx(ctx context.Context, q querier, accountID, survivorID, fromID string, w store.Write) (*domain.Person, error) {
	rows := map[string]*mergeRow{}
	for _, id := range slices.Sorted(slices.Values([]string{survivorID, fromID})) {
		lock := q.s.dialect.LockPerson
		if id == fromID {
			lock = q.s.dialect.LockRows
		}
		r, err := lockMergeRow(ctx, q, accountID, id, lock)
		if err != nil {
			return nil, err
		}
		rows[id] = r
	}
	sv, m := rows[survivorID], rows[fromID]
	if sv == nil {
		return nil, notFoundOrMerged(ctx, q, accountID, survivorID)
	}
	if m == nil {
		into, err := mergedInto(ctx, q, accountID, fromID)
		switch {
		case err != nil:
			return nil, err
		case into == survivorID:
			// Merged already: the same answer, nothing written again.
			return getPerson(ctx, q, accountID, survivorID)
		case into != "":
			return nil, &domain.MergedError{PersonID: fromID, MergedInto: into}
		}
		return nil, domain.NotFound("person", fromID)
	}
	now := w.Now.UnixMilli()
	attrs, aliases := mergedAttributes(sv, m)

	// The ids the merged person absorbed (a chain): their tombstones name
	// the survivor from now on, and move to the end of the feed with the
	// merged person's, so that a follower that read them reads them again.
	absorbed, err := queryAll(ctx, q, scanString, `SELECT person_id FROM person_merges WHERE account_id = $1 AND merged_into = $2
		ORDER BY person_id`, accountID, fromID)
	if err != nil {
		return nil, err
	}

	// What hangs from the merged person, in the lock order: breadcrumbs
	// (same ids, so idempotency keys keep resolving to the same records),
	// tag links in tag id order, custom values (the survivor's win), then
	// its outbox row, which is folded into the survivor's change below and
	// never delivered under the merged id.
	// $1 the account, $2 the survivor, $3 the merged person; each
	// statement is given the ones it names.
	both, merged := []any{accountID, survivorID, fromID}, []any{accountID, fromID}
	for _, st := range []struct {
		sql  string
		args []any
	}{
		{`UPDATE breadcrumbs SET person_id = $2 WHERE account_id = $1 AND person_id = $3`, both},
		{`INSERT INTO person_tags (account_id, person_id, tag_id, created_at, last_seen_at)
			SELECT t.account_id, $2, t.tag_id, t.created_at, p.last_seen_at FROM person_tags t
			JOIN persons p ON p.account_id = t.account_id AND p.id = $2
			WHERE t.account_id = $1 AND t.person_id = $3 ORDER BY t.tag_id
			ON CONFLICT (person_id, tag_id) DO NOTHING`, both},
		{`DELETE FROM person_tags WHERE account_id = $1 AND person_id = $2`, merged},
		{`INSERT INTO person_field_values (account_id, person_id, field_id, value)
			SELECT account_id, $2, field_id, value FROM person_field_values WHERE account_id = $1 AND person_id = $3
			ORDER BY field_id ON CONFLICT (person_id, field_id) DO NOTHING`, both},
		{`DELETE FROM person_field_values WHERE account_id = $1 AND person_id = $2`, merged},
		// Both outbox rows, by person id (the lock order), before the
		// merged person's goes and the survivor's is written; nothing to
		// lock where writes do not run in parallel.
		{lockBothBursts(q), both},
		{`DELETE FROM bursts WHERE account_id = $1 AND person_id = $2`, merged},
		{`DELETE FROM delivered_states WHERE account_id = $1 AND person_id = $2`, merged},
		// The person counted out where it was last seen, as an erasure does.
		{`INSERT INTO timeline_deltas (account_id, series, key, at_ms, n) VALUES ($1, 'persons', '', $2, -1)`,
			[]any{accountID, m.lastSeen}},
		// Its identifiers go with it, before the survivor takes any.
		{`DELETE FROM persons WHERE account_id = $1 AND id = $2`, merged},
		// The chain: what the merged person absorbed resolves to the
		// survivor now, tombstones included.
		{`UPDATE person_changes SET merged_into = $2 WHERE account_id = $1
			AND person_id IN (SELECT person_id FROM person_merges WHERE account_id = $1 AND merged_into = $3)`, both},
		{`UPDATE person_merges SET merged_into = $2 WHERE account_id = $1 AND merged_into = $3`, both},
		{`UPDATE person_aliases SET person_id = $2 WHERE account_id = $1 AND person_id = $3`, both},
	} {
		if st.sql == "" {
			continue
		}
		if _, err := q.exec(ctx, st.sql, st.args...); err != nil {
			return nil, err
		}
	}
	for _, id := range absorbed {
		for _, stmt := range q.s.dialect.Changes.Touch {
			if _, err := q.exec(ctx, stmt, accountID, id, now); err != nil {
				return nil, err
			}
		}
	}
	// The delete made the merged person's entry a tombstone; it tells
	// into whom, at the merge's time.
	if _, err := q.exec(ctx, `UPDATE person_changes SET changed_at = $3, merged_into = $4 WHERE account_id = $1 AND person_id = $2`,
		accountID, fromID, now, survivorID); err != nil {
		return nil, err
	}
	if _, err := q.exec(ctx, `INSERT INTO person_merges (account_id, person_id, merged_into, merged_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (account_id, person_id) DO UPDATE SET merged_into = excluded.merged_into, merged_at = excluded.merged_at`,
		accountID, fromID, survivorID, now); err != nil {
		return nil, err
	}
	for _, a := range aliases {
		if _, err := q.exec(ctx, `INSERT INTO person_aliases (account_id, kind, value, person_id, from_id, merged_at)
			VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (account_id, kind, value) DO UPDATE SET person_id = excluded.person_id, from_id = excluded.from_id,
				merged_at = excluded.merged_at`, accountID, a.kind, a.value, survivorID, fromID, now); err != nil {
			return nil, err
		}
	}
	// The survivor's change: its attributes and the stamps in one UPDATE,
	// and its burst (person.updated, or person.created while its creation
	// burst is open), as every person write records it.
	if _, err := recordChange(ctx, q, recorded{accountID: accountID, personID: survivorID, c: changed, attrs: attrs, w: w}, false); err != nil {
		return nil, err
	}
	// After the tombstone, even when nothing the triggers watch changed.
	for _, stmt := range q.s.dialect.Changes.Touch {
		if _, err := q.exec(ctx, stmt, accountID, survivorID, now); err != nil {
			return nil, err
		}
	}
	// Subscriptions before deliveries, FOR SHARE, as an erasure reads them.
	subs, err := activeSubscriptions(ctx, q, []string{accountID}, q.s.dialect.ShareRows)
	if err != nil {
		return nil, err
	}
	if err := announceMerge(ctx, q, subs[accountID], accountID, fromID, survivorID, w.Now); err != nil {
		return nil, err
	}
	return getPerson(ctx, q, accountID, survivorID)
}

// lockBothBursts is the statement that locks the outbox rows of a merge's
// two persons ($2, $3) in person id order, "" where nothing is locked.
func lockBothBursts(q querier) string {
	if q.s.dialect.LockRows == "" {
		return ""
	}
	return `SELECT person_id FROM bursts WHERE account_id = $1 AND person_id IN ($2, $3) ORDER BY person_id` + q.s.dialect.LockRows
}

// alias is one identifier a merge makes an alias of the survivor.
type alias struct{ kind, value string }

// mergedAttributes is what the survivor sv takes of the merged person m:
// the columns to assign (nil when none) and the aliases to record.
func mergedAttributes(sv, m *mergeRow) (attrUpdate, []alias) {
	var (
		attrs   attrUpdate
		aliases []alias
	)
	for k, kind := range domain.AliasKinds {
		switch service.MergeIdentifier(sv.ids[k].String, m.ids[k].String) {
		case service.Taken:
			if identifierColumns[k] == "email_norm" {
				attrs = append(attrs, columnValue{"email", nullable(strPtr(m.email))})
			}
			attrs = append(attrs, columnValue{identifierColumns[k], m.ids[k].String})
		case service.Aliased:
			aliases = append(aliases, alias{kind, m.ids[k].String})
		}
	}
	for i, column := range mergeTextColumns {
		if v, changes := service.FillNull(strPtr(sv.text[i]), strPtr(m.text[i])); changes {
			attrs = append(attrs, columnValue{column, *v})
		}
	}
	if (sv.companies == "" || sv.companies == "[]") && m.companies != "" && m.companies != "[]" {
		attrs = append(attrs, columnValue{"companies", m.companies})
	}
	if (sv.address == "" || sv.address == "{}") && m.address != "" && m.address != "{}" {
		attrs = append(attrs, columnValue{"address", m.address})
	}
	// An opt-out is the human's: either record's holds for the one left.
	if !sv.emailOptOut && m.emailOptOut {
		attrs = append(attrs, columnValue{"email_opt_out", true})
	}
	if m.created < sv.created {
		attrs = append(attrs, columnValue{"created_at", m.created})
	}
	return attrs, aliases
}

// announceMerge queues one person.merged delivery for each of the
// account's active subscriptions that lists the event, due at once, as
// announceErasure does for person.deleted.
func announceMerge(ctx context.Context, q querier, subs []domain.Webhook, accountID, fromID, survivorID string, now time.Time) error {
	for _, sub := range subs {
		if !sub.Wants(domain.EventPersonMerged) {
			continue
		}
		id := domain.NewDeliveryID()
		body, err := domain.MergedBody(id, now, fromID, survivorID, now)
		if err != nil {
			return err
		}
		if sub.IncludeChanges {
			body = domain.WithChanges(body, nil)
		}
		due := now
		if err := insertDelivery(ctx, q, domain.Delivery{ID: id, AccountID: accountID, WebhookID: sub.ID,
			Event: domain.EventPersonMerged, PersonID: fromID, Body: body, SecretVersion: sub.SecretVersion,
			Status: domain.DeliveryPending, NextAttemptAt: &due, CreatedAt: now}); err != nil {
			return err
		}
	}
	return nil
}

// PersonAliases returns a page of a person's aliases (see store.Persons).
func (s *Store) PersonAliases(ctx context.Context, accountID, personID string, p domain.PageRequest) (_ []domain.PersonAlias, _ int, err error) {
	defer named("PersonAliases", &err)
	var (
		out   []domain.PersonAlias
		total int
	)
	err = s.inReadTx(ctx, func(q querier) error {
		var one int
		err := q.queryRow(ctx, `SELECT 1 FROM persons WHERE account_id = $1 AND id = $2`, accountID, personID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return notFoundOrMerged(ctx, q, accountID, personID)
		}
		if err != nil {
			return err
		}
		out, total, err = listPage(ctx, q, `kind, value, from_id, merged_at`,
			`person_aliases WHERE account_id = $1 AND person_id = $2`, `merged_at, kind, value`,
			[]any{accountID, personID}, p, scanAlias)
		return err
	})
	return out, total, err
}

func scanAlias(sc scanner) (domain.PersonAlias, error) {
	var (
		a  domain.PersonAlias
		at int64
	)
	err := sc.Scan(&a.Kind, &a.Value, &a.From, &at)
	a.DateMerged = domain.T(domain.FromMillis(at))
	return a, err
}

// aliasesOf lists every alias of a person, oldest first (an erasure, the
// report and the export).
func aliasesOf(ctx context.Context, q querier, accountID, personID string) ([]domain.PersonAlias, error) {
	return queryAll(ctx, q, scanAlias, `SELECT kind, value, from_id, merged_at FROM person_aliases
		WHERE account_id = $1 AND person_id = $2 ORDER BY merged_at, kind, value`, accountID, personID)
}

// aliasOwner is the survivor an identifier of kind (a domain.AliasKinds
// name) resolves to through an alias, "" when it is none.
func aliasOwner(ctx context.Context, q querier, accountID, kind, value string) (string, error) {
	var id string
	err := q.queryRow(ctx, `SELECT person_id FROM person_aliases WHERE account_id = $1 AND kind = $2 AND value = $3`,
		accountID, kind, value).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return id, err
}
