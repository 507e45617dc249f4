package sqlstore

import (
	"context"
	"database/sql"
	"strconv"
	"strings"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/store"
)

// Creating persons together. On PostgreSQL each new person is one
// statement (createUnlessHeld) and one commit, and under concurrent upserts
// the commits wait on the write-ahead log's flush far more than on anything
// else, and a flush carried only a few commits. The creator runs the
// createUnlessHeld calls that arrive while others are under way as one
// statement per batch, so a batch of persons shares one commit and one
// flush, and each caller is answered once that commit is done: an
// acknowledged person is exactly as durable as before.
//
// A batch that fails (a concurrent create of the same identifier, or two
// calls of the batch holding one) commits nothing; each of its calls then
// runs alone, as it would have without the batch, on connections of their
// own so that the next batch need not wait for them.
//
// Batches run one at a time. Batches in flight together wait on each
// other's new unique index entries when their persons share an identifier,
// and four at once served fewer creates than one (pdsbench's sustained new
// upserts row). So that one batch cannot hold every create up behind a
// lock (an import's transaction holding an identifier it inserted), a
// batch waits for a lock at most 100 ms (batchLockTimeout) before it fails
// and its calls run alone.

// maxCreateBatch bounds the persons of one statement.
const maxCreateBatch = 64

// batchLockTimeout is how long a batch's statement waits for a lock, set
// by the statement itself, for its own transaction (set_config's is_local):
// a session setting would outlive the statement on a connection that a
// transaction-mode pooler hands to another client next.
const batchLockTimeout = `(SELECT set_config('lock_timeout', '100ms', true)) IS NOT NULL`

// createCall is one createUnlessHeld waiting for its batch.
type createCall struct {
	batchCall
	ids           domain.Identifiers
	accountID, id string // id: the person the call creates
	person, burst []any  // newPersonRow and newBurstRow
	// The answer: the holders of ids (none: the person was created), or err.
	holders []heldRow
	err     error
}

// newCreateCall is the call that creates the person id of attrs, with the
// outbox row a created person gets (service.BurstAfterChange).
func newCreateCall(accountID, id string, attrs attributes, w store.Write) *createCall {
	burst := service.BurstAfterChange(nil, true, w.Now, w.Window)
	return &createCall{ids: attrs.Identifiers, accountID: accountID, id: id,
		person: newPersonRow(accountID, id, attrs, w), burst: newBurstRow(accountID, id, burst)}
}

// creator gathers createCalls into batches (batcher).
type creator struct {
	s *Store
	*batcher[*createCall]
}

func startCreator(s *Store) *creator {
	c := &creator{s: s}
	c.batcher = startBatcher(maxCreateBatch, c.runTogether, c.runAlone)
	return c
}

// create runs call in the next batch and waits for its answer.
func (c *creator) create(ctx context.Context, call *createCall) error {
	if err := c.do(ctx, call); err != nil {
		return err
	}
	return call.err
}

// runAlone answers call with a statement of its own. When the person the
// call creates already holds its identifiers, the failed batch did create
// it after all: the call is answered as created once that commit is
// confirmed (confirmDurable), or refused when it cannot be.
func (c *creator) runAlone(call *createCall) {
	query, args := createUnlessHeldQuery(c.s.dialect, call.accountID, call.ids, call.person, call.burst, "")
	rows, err := c.s.writer().query(call.ctx, query, args...)
	if err != nil {
		call.err = err
		return
	}
	call.holders, call.err = scanAllHeld(rows)
	if call.err == nil && createdEarlier(call.holders, call.id) {
		call.holders, call.err = nil, c.s.confirmDurable(call.ctx)
	}
}

// createdEarlier reports whether holders, of the identifiers of a call
// creating person id, show that person alone: a create that committed.
func createdEarlier(holders []heldRow, id string) bool {
	return len(holders) == 1 && holders[0].ID == id
}

// scanAllHeld reads the rows of createUnlessHeldQuery, and closes them.
func scanAllHeld(rows *sql.Rows) ([]heldRow, error) {
	defer rows.Close()
	var held []heldRow
	for rows.Next() {
		r, err := scanHeld(rows, nil)
		if err != nil {
			return nil, err
		}
		held = addHeld(held, r)
	}
	return held, rows.Close()
}

// runTogether creates every person of batch whose identifiers nobody
// holds, with its outbox row, in one statement, and gives the others their
// holders.
func (c *creator) runTogether(ctx context.Context, batch []*createCall) error {
	if len(batch) == 1 {
		// The statement of one call alone reads no list of inputs.
		call := batch[0]
		query, args := createUnlessHeldQuery(c.s.dialect, call.accountID, call.ids, call.person, call.burst, batchLockTimeout)
		rows, err := c.s.writer().query(ctx, query, args...)
		if err != nil {
			return err
		}
		holders, err := scanAllHeld(rows)
		if err != nil {
			return err
		}
		call.holders, call.err = holders, nil
		return nil
	}
	query, args := createManyQuery(c.s.dialect, batch, batchLockTimeout)
	rows, err := c.s.writer().query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	holders := make([][]heldRow, len(batch))
	for rows.Next() {
		var n int
		r, err := scanHeld(rows, &n)
		if err != nil {
			return err
		}
		holders[n] = addHeld(holders[n], r)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	for i, call := range batch {
		call.holders, call.err = holders[i], nil
	}
	return nil
}

// personInputTypes are the types of newPersonColumns, then of the outbox
// row's event and times: a VALUES list of parameters needs them spelled.
var personInputTypes = []string{"text", "text", "text", "text", "text", "text",
	"text", "text", "text", "text", "bigint", "bigint", "text", "bigint", "bigint", "bigint"}

// createManyQuery is createUnlessHeldQuery for several persons: the
// holders of each one's identifiers, each looked up on its own unique
// index, and the persons nobody holds inserted with their outbox rows, all
// reading one snapshot. Two persons of the batch with one identifier both
// insert, and the statement fails unique. guard is as createUnlessHeldQuery's.
func createManyQuery(d Dialect, batch []*createCall, guard string) (string, []any) {
	var args sqlArgs
	rows := make([]string, len(batch))
	for i, call := range batch {
		vals := append(append([]any{}, call.person...), call.burst[2:]...)
		parts := make([]string, 0, len(vals)+1)
		parts = append(parts, args.add(i)+"::int")
		for j, v := range vals {
			parts = append(parts, args.add(v)+"::"+personInputTypes[j])
		}
		rows[i] = "(" + strings.Join(parts, ", ") + ")"
	}
	lookup := func(column string) string {
		return `SELECT i.n, ` + heldLookup(d, `p.`) + ` FROM i
			JOIN persons p ON p.account_id = i.account_id AND p.` + column + ` = i.` + column
	}
	return `WITH i (n, ` + newPersonColumns + `, event, opened_at, last_change_at, due_at) AS (VALUES ` + strings.Join(rows, ", ") + `),
		h AS (` + lookup("external_id") + ` UNION ALL ` + lookup("email_norm") + ` UNION ALL ` + lookup("f_id") + `
			UNION ALL SELECT i.n, m.* FROM i, LATERAL (` + suppressingMark(`i.account_id`) + `) AS m),
		p AS (INSERT INTO persons (` + newPersonColumns + `) SELECT ` + newPersonColumns + ` FROM i
			WHERE NOT EXISTS (SELECT 1 FROM h WHERE h.n = i.n)` + guarded(guard) + ` RETURNING id),
		b AS (INSERT INTO bursts (` + newBurstColumns + `)
			SELECT i.id, i.account_id, i.event, i.opened_at, i.last_change_at, i.due_at FROM i JOIN p ON p.id = i.id)
		` + heldSelect(d, true), args
}

// createTogether runs a batch whose items each name identifiers no other
// item names, and no custom field values, on an engine whose WITH clause
// may write (CreateUnlessHeld's together): one statement per 64 items creates
// every item nobody holds the identifiers of, with its outbox row
// (createManyQuery, as concurrent single creates share), and gives the
// others their holders, upserted then in order as upsertItems would. Items
// with distinct identifiers do not touch each other's persons, so creating
// first commutes with matching. Five statements an item made a batch of new
// persons a few hundred round trips. It reports whether it ran the batch.
func (s *Store) createTogether(ctx context.Context, q querier, accountID string, items []domain.PersonUpsert, w store.Write,
	results []store.UpsertResult) (bool, error) {
	if !service.StampsFor(createdNew).Event {
		return false, nil
	}
	seen := map[[2]string]bool{}
	for _, in := range items {
		if len(in.CustomFields.Value) > 0 || !in.Identifiers().Any() {
			return false, nil
		}
		if values, err := service.CustomValueChanges(in.CustomFields, nil); err != nil || len(values) > 0 {
			return false, nil
		}
		for kind, v := range keys(in.Identifiers()) {
			k := [2]string{strconv.Itoa(kind), v}
			if v == "" {
				continue
			}
			if seen[k] {
				return false, nil
			}
			seen[k] = true
		}
	}
	calls := make([]*createCall, len(items))
	attrs := make([]attributes, len(items))
	ids := make([]string, len(items))
	for i, in := range items {
		attrs[i] = attributes{Identifiers: in.Identifiers(), firstName: in.FirstName.Ptr(), lastName: in.LastName.Ptr(), phone: in.Phone.Ptr()}
		ids[i] = domain.NewID(domain.PersonIDPrefix)
		calls[i] = newCreateCall(accountID, ids[i], attrs[i], w)
	}
	held := make([][]heldRow, len(items))
	for start := 0; start < len(calls); start += maxCreateBatch {
		chunk := calls[start:min(start+maxCreateBatch, len(calls))]
		query, args := createManyQuery(s.dialect, chunk, "")
		if err := s.createChunk(ctx, q, query, args, held[start:]); err != nil {
			if s.isUnique(err) {
				// Another writer made one of these persons meanwhile: item
				// by item, each in a savepoint, the batch matches it.
				return true, errItemNeedsSavepoint
			}
			return true, err
		}
	}
	for i, in := range items {
		if len(held[i]) == 0 {
			results[i] = store.UpsertResult{Person: createdPerson(ids[i], attrs[i], nil, w), Created: true}
			continue
		}
		holders := holdersOf(held[i])
		heldNow := &holders
		if markedSuppressing(held[i]) {
			heldNow = nil // the transaction looks up and checks
		}
		p, created, err := upsertAndRecord(ctx, q, accountID, in, w, heldNow)
		switch {
		case err == nil:
			results[i] = store.UpsertResult{Person: p, Created: created}
		case domain.IsRefusal(err) || s.isUnique(err):
			return true, errItemNeedsSavepoint
		default:
			return true, err
		}
	}
	return true, nil
}

// createChunk runs a createManyQuery and files each holder it answers
// under its call's number in held.
func (s *Store) createChunk(ctx context.Context, q querier, query string, args []any, held [][]heldRow) error {
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var n int
		r, err := scanHeld(rows, &n)
		if err != nil {
			return err
		}
		held[n] = addHeld(held[n], r)
	}
	return rows.Close()
}
