package sqlstore

import (
	"context"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/store"
)

// appendToHolder is Append Breadcrumb in one statement, for an engine whose
// WITH clause may write (AppendInOneStatement), when the breadcrumb names
// its person by one identifier and there is nothing else to check: the
// statement looks the identifier up (holdersQuery) and, when a person holds
// it, inserts the breadcrumb and stamps that person as recordChange stamps a
// breadcrumb for an existing person. A statement outside a transaction
// commits on its own, so the append costs one round trip instead of five
// (BEGIN, lookup, insert, update, COMMIT); concurrent appends share one
// statement and its commit (the appender, postgres_append_batch.go).
//
// With one identifier, service.MatchOrCreate matches its holder, else
// creates a person; so ok is false, and nothing is written, when nobody
// holds it, as when the breadcrumb needs more (two identifiers to decide
// between, a person_id, campaign or project to check, a replayed id): the
// caller then runs the whole append in a transaction.
func (s *Store) appendToHolder(ctx context.Context, accountID string, in domain.BreadcrumbInput, w store.Write) (domain.Breadcrumb, bool, error) {
	ids := in.Identifiers()
	if ids.Count() != 1 || in.ID != "" || in.PersonID != nil || in.CampaignID != nil || in.ProjectID != nil {
		return domain.Breadcrumb{}, false, nil
	}
	// The statement writes only the last seen time; any other stamp or an
	// event is the transaction's to record.
	if stamps := service.StampsFor(seenOnly); !stamps.LastSeen || stamps.UpsertResult != "" || stamps.Event {
		return domain.Breadcrumb{}, false, nil
	}
	call := &appendCall{b: newBreadcrumb(accountID, in, w), ids: ids, seenAt: w.Now.UnixMilli()}
	if err := s.appender.append(ctx, call); err != nil || !call.ok {
		return domain.Breadcrumb{}, false, err
	}
	call.b.PersonID = call.personID
	return call.b, true, nil
}

// AppendInOneStatement appends a breadcrumb whose one identifier has a
// holder in one statement outside a transaction (appendToHolder), the
// concurrent ones together (appender): for an engine whose WITH clause may
// write (PostgreSQL), where each round trip counts.
var AppendInOneStatement Appends = appendInOne{}

type appendInOne struct{}

func (appendInOne) start(s *Store) { s.appender = startAppender(s) }
func (appendInOne) stop(s *Store)  { s.appender.close() }

func (appendInOne) toHolder(ctx context.Context, s *Store, accountID string, in domain.BreadcrumbInput,
	w store.Write) (domain.Breadcrumb, bool, error) {
	return s.appendToHolder(ctx, accountID, in, w)
}

// appendOne is appendToHolder's one statement for call: its holder, and
// false when nobody holds its identifier or the holder was erased between
// the look-up and the insert (the transaction then matches or creates
// afresh). guard is as createUnlessHeldQuery's.
func (s *Store) appendOne(ctx context.Context, call *appendCall, guard string) (string, bool, error) {
	b := call.b
	holders, hargs := holdersOrSurvivorsQuery(b.AccountID, call.ids)
	args := sqlArgs(hargs)
	query := `WITH h AS (` + holders + `),
		b AS (INSERT INTO breadcrumbs (` + breadcrumbColumns + `)
			SELECT ` + args.add(b.ID) + `, ` + args.add(b.AccountID) + `, ` + args.add(b.Flavor) + `, h.id, NULL, NULL, ` +
		args.list(nullable(b.Email), nullable(b.ExternalID), nullable(b.FID), nullMillis(b.OccurredAt),
			b.ActivityAt.UnixMilli(), b.CreatedAt.UnixMilli()) + ` FROM h` + whereGuard(guard) + ` RETURNING person_id)
		UPDATE persons SET last_seen_at = ` + args.add(call.seenAt) + ` FROM b
		WHERE persons.account_id = ` + args.add(b.AccountID) + ` AND persons.id = b.person_id RETURNING persons.id`
	rows, err := s.writer().query(ctx, query, args...)
	if err != nil && s.dialect.Conflict != nil && s.dialect.Conflict(err) == ConflictErased {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	defer rows.Close()
	if !rows.Next() {
		return "", false, rows.Err()
	}
	var personID string
	if err := rows.Scan(&personID); err != nil {
		return "", false, err
	}
	return personID, true, rows.Close()
}

// whereGuard is a WHERE clause of guard alone, if any.
func whereGuard(guard string) string {
	if guard == "" {
		return ""
	}
	return ` WHERE ` + guard
}
