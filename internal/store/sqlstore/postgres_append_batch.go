package sqlstore

import (
	"context"

	"github.com/pds-dev/pds/internal/domain"
)

// Appending breadcrumbs together (AppendInOneStatement: PostgreSQL). A
// breadcrumb for the holder of its one identifier is one statement
// (appendToHolder), but each statement is also a commit, and under
// concurrent appends the commits waited on the write-ahead log's flush far
// more than on anything else: most samples of the appending backends
// waited on WALWrite or WALSync, a flush carried only a few commits, and an
// append held its connection so long that the pool's connections, not the
// server, set the rate. The appender runs the calls that arrive while a
// batch is under way as one statement, one commit and one flush for all of
// them, and answers each once that commit is done: an acknowledged
// breadcrumb is exactly as durable as before.
//
// A batch that fails (a holder erased meanwhile, a lock it waited on for
// longer than batchLockTimeout) commits nothing, and each of its calls
// then runs alone, as it would have without the batch, on connections of
// their own. A batch moves its persons' last-seen times in whatever order
// the plan takes them, not by id (lock_order.go); against a writer that
// holds one of them and waits for another, the batch gives up at its lock
// timeout instead of deadlocking, and its calls run alone.

// maxAppendBatch bounds the breadcrumbs of one statement.
const maxAppendBatch = 64

// appendCall is one appendToHolder waiting for its batch.
type appendCall struct {
	batchCall
	// b is the breadcrumb to store; its person is the holder of ids' one
	// identifier, seen at seenAt (unix milliseconds).
	b      domain.Breadcrumb
	ids    domain.Identifiers
	seenAt int64
	// The answer: the holder (ok false: nobody holds the identifier and
	// nothing was written), or err.
	personID string
	ok       bool
	err      error
}

// appender gathers appendCalls into batches (batcher), one batch at a
// time, as the creator's: a second worker, idle while the first's batch
// was at the server, took the next call alone: in pdsbench's Append
// Breadcrumb row, two workers served no more appends than one, at more of
// pds's CPU per append and a higher p99.
type appender struct {
	s *Store
	*batcher[*appendCall]
}

func startAppender(s *Store) *appender {
	a := &appender{s: s}
	a.batcher = startBatcher(maxAppendBatch, a.runTogether, a.runAlone)
	return a
}

// append runs call in the next batch and waits for its answer.
func (a *appender) append(ctx context.Context, call *appendCall) error {
	if err := a.do(ctx, call); err != nil {
		return err
	}
	return call.err
}

// runAlone answers call with a statement of its own. A breadcrumb whose id
// is taken was stored by the failed batch after all (its id is new to
// each call): the call is answered with its holder once that commit is
// confirmed (confirmDurable), or refused when it cannot be.
func (a *appender) runAlone(call *appendCall) {
	call.personID, call.ok, call.err = a.s.appendOne(call.ctx, call, "")
	if call.err != nil && a.s.isUnique(call.err) {
		call.personID, call.ok, call.err = a.s.appendedEarlier(call.ctx, call)
	}
}

// appendedEarlier answers a call whose breadcrumb is stored already: the
// person it was stored for, once the commit that stored it is confirmed.
func (s *Store) appendedEarlier(ctx context.Context, call *appendCall) (string, bool, error) {
	var personID string
	err := s.writer().queryRow(ctx, `SELECT person_id FROM breadcrumbs WHERE account_id = $1 AND id = $2`,
		call.b.AccountID, call.b.ID).Scan(&personID)
	if err != nil {
		return "", false, err
	}
	if err := s.confirmDurable(ctx); err != nil {
		return "", false, err
	}
	return personID, true, nil
}

// runTogether stores every breadcrumb of batch whose identifier someone
// holds, and moves those persons' last-seen times, in one statement.
func (a *appender) runTogether(ctx context.Context, batch []*appendCall) error {
	if len(batch) == 1 {
		// The statement of one call alone reads no list of inputs.
		call := batch[0]
		personID, ok, err := a.s.appendOne(ctx, call, batchLockTimeout)
		if err != nil {
			return err
		}
		call.personID, call.ok = personID, ok
		return nil
	}
	byID := make(map[string]*appendCall, len(batch))
	for _, call := range batch {
		byID[call.b.ID] = call
	}
	rows, err := a.s.writer().query(ctx, appendManyQuery, appendManyArgs(batch)...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id, personID string
		if err := rows.Scan(&id, &personID); err != nil {
			return err
		}
		if call := byID[id]; call != nil {
			call.personID, call.ok = personID, true
		}
	}
	return rows.Close()
}

// appendManyQuery is appendToHolder's statement for several breadcrumbs,
// given as arrays (appendManyArgs), so that every size of batch is the one
// prepared statement: each breadcrumb's holder is looked up on the unique
// index of its one identifier, the breadcrumbs with a holder are inserted,
// and each holder is seen at the latest time of its breadcrumbs.
var appendManyQuery = `WITH i AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
		$7::text[], $8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[])
		AS i (id, account_id, flavor, email, email_norm, external_id, f_id, occurred_at, activity_at, created_at, seen_at)),
	h AS (SELECT i.id, p.id AS person_id FROM i JOIN persons p ON p.account_id = i.account_id AND p.external_id = i.external_id
		UNION ALL SELECT i.id, p.id FROM i JOIN persons p ON p.account_id = i.account_id AND p.email_norm = i.email_norm
		UNION ALL SELECT i.id, p.id FROM i JOIN persons p ON p.account_id = i.account_id AND p.f_id = i.f_id),
	b AS (INSERT INTO breadcrumbs (` + breadcrumbColumns + `)
		SELECT i.id, i.account_id, i.flavor, h.person_id, NULL, NULL, i.email, i.external_id, i.f_id,
			i.occurred_at, i.activity_at, i.created_at
		FROM i JOIN h ON h.id = i.id WHERE ` + batchLockTimeout + `
		RETURNING id, account_id, person_id),
	u AS (UPDATE persons SET last_seen_at = s.seen_at
		FROM (SELECT b.account_id, b.person_id, MAX(i.seen_at) AS seen_at FROM b JOIN i ON i.id = b.id
			GROUP BY b.account_id, b.person_id) s
		WHERE persons.account_id = s.account_id AND persons.id = s.person_id)
	SELECT id, person_id FROM b`

// appendManyArgs are the arrays of appendManyQuery.
func appendManyArgs(batch []*appendCall) []any {
	n := len(batch)
	ids, accounts, flavors := make([]string, n), make([]string, n), make([]string, n)
	emails, emailNorms, externalIDs, fIDs := make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n)
	occurred, activity, created, seen := make([]*int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	for j, call := range batch {
		b := call.b
		ids[j], accounts[j], flavors[j] = b.ID, b.AccountID, b.Flavor
		emails[j], externalIDs[j], fIDs[j] = b.Email, b.ExternalID, b.FID
		if call.ids.Email != nil {
			norm := domain.NormEmail(*call.ids.Email)
			emailNorms[j] = &norm
		}
		if b.OccurredAt != nil {
			ms := b.OccurredAt.UnixMilli()
			occurred[j] = &ms
		}
		activity[j], created[j], seen[j] = b.ActivityAt.UnixMilli(), b.CreatedAt.UnixMilli(), call.seenAt
	}
	return []any{ids, accounts, flavors, emails, emailNorms, externalIDs, fIDs, occurred, activity, created, seen}
}
