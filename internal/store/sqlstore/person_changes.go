package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// The change feed: person_changes holds one entry per person, moved to the
// end by the triggers of each engine's migration 00240 in the statement
// that changes the person. Where an entry stands, and which entries a
// reader may pass, is the engine's (Dialect.Changes): SQLite numbers them
// in commit order; PostgreSQL reads them a batch at a time, the
// transactions one snapshot sees and an earlier one did not (as PgQ cuts
// its batches), so that a transaction that commits late is in a later
// batch rather than passed over, and one still running holds back no other.

// ChangeFeed is how an engine places and passes the entries of the feed.
// Page's placeholders are $1 the account, $2 the position's Base, $3 its
// Cut (as Cut made it), $4 its Xid (as text), $5 its Seq and $6 the limit;
// it reads each entry's person_id, xid (as text), seq, changed_at, deleted
// and merged_into, in feed order.
type ChangeFeed struct {
	Page string
	// Cut reads the snapshot a batch is cut at ("" where there are no
	// batches), in the read's own transaction.
	Cut string
	// Head reads the position after every change committed now, and
	// before every change still to commit: its Base and Seq ($1: the
	// account).
	Head string
	// Reorder places the entries of persons a batch or an import changed
	// ($2, a JSON array of their ids) after every other, in that order,
	// as its items were: its statements write persons, links and values
	// in statements of their own. $1 is the account.
	Reorder []string
	// Touch moves one person's entry after every other this transaction
	// wrote ($1 the account, $2 the person, $3 its changed_at in
	// milliseconds): a merge's survivor, which changes even when none of
	// the columns the triggers watch does.
	Touch []string
}

// reorderChanges runs Dialect.Changes.Reorder for the persons of ids, each
// at its last place.
func reorderChanges(ctx context.Context, q querier, accountID string, ids []string) error {
	if len(ids) < 2 {
		return nil
	}
	last := make(map[string]int, len(ids))
	for i, id := range ids {
		last[id] = i
	}
	ordered := make([]string, 0, len(last))
	for i, id := range ids {
		if last[id] == i {
			ordered = append(ordered, id)
		}
	}
	list, err := json.Marshal(ordered)
	if err != nil {
		return err
	}
	for _, stmt := range q.s.dialect.Changes.Reorder {
		if _, err := q.exec(ctx, stmt, accountID, string(list)); err != nil {
			return err
		}
	}
	return nil
}

// changedInOrder lists the persons a batch created or changed, in the
// order of its items.
func changedInOrder(results []store.UpsertResult) []string {
	var ids []string
	for _, r := range results {
		if r.Err == nil && r.Person != nil && r.Person.UpsertResult != domain.UpsertUnchanged {
			ids = append(ids, r.Person.ID)
		}
	}
	return ids
}

// PersonChanges reads a page of the account's feed, and each live entry's
// person, in one snapshot.
func (s *Store) PersonChanges(ctx context.Context, accountID string, after domain.ChangePosition, limit int) (_ []domain.PersonChange, _ domain.ChangePosition, err error) {
	defer named("PersonChanges", &err)
	var (
		out  []domain.PersonChange
		next domain.ChangePosition
	)
	f := s.dialect.Changes
	err = s.safeReadTx(ctx, func(q querier) error {
		cut := after.Cut
		if cut == "" {
			if err := q.queryRow(ctx, f.Cut).Scan(&cut); err != nil {
				return err
			}
		}
		entries, err := queryAll(ctx, q, scanChange, f.Page, accountID, after.Base, cut,
			strconv.FormatUint(after.Xid, 10), after.Seq, limit)
		if err != nil {
			return err
		}
		var live []string
		for _, e := range entries {
			if e.Deleted == nil {
				live = append(live, e.PersonID)
			}
		}
		persons, err := personsByID(ctx, q, accountID, live)
		if err != nil {
			return err
		}
		if err := attachDetails(ctx, q, accountID, persons); err != nil {
			return err
		}
		for i, j := 0, 0; i < len(entries); i++ {
			// Each entry's position goes on within the page's batch.
			entries[i].Position.Base, entries[i].Position.Cut = after.Base, cut
			if entries[i].Deleted == nil {
				entries[i].Person = &persons[j]
				j++
			}
		}
		out, next = entries, nextPosition(after, cut, entries, limit)
		return nil
	})
	if err != nil {
		return nil, after, fmt.Errorf("sqlstore: PersonChanges: %w", err)
	}
	return out, next, nil
}

// nextPosition is where a reader goes on from after a page: past its last
// entry, within the batch the page was cut from while the page is full, and
// to the next batch (from the cut) once one is not.
func nextPosition(after domain.ChangePosition, cut string, page []domain.PersonChange, limit int) domain.ChangePosition {
	next := after
	if len(page) > 0 {
		last := page[len(page)-1].Position
		next.Xid, next.Seq = last.Xid, last.Seq
	}
	if cut == "" {
		return next // no batches: the last entry's number is the position
	}
	if len(page) == limit {
		next.Cut = cut
		return next
	}
	return domain.ChangePosition{Base: cut, Seq: -1}
}

func scanChange(sc scanner) (domain.PersonChange, error) {
	var (
		c          domain.PersonChange
		xid        string
		changedAt  int64
		deleted    bool
		mergedInto sql.NullString
	)
	if err := sc.Scan(&c.PersonID, &xid, &c.Position.Seq, &changedAt, &deleted, &mergedInto); err != nil {
		return c, err
	}
	var err error
	if c.Position.Xid, err = strconv.ParseUint(xid, 10, 64); err != nil {
		return c, fmt.Errorf("a change's transaction %q: %w", xid, err)
	}
	if deleted {
		c.Deleted = &domain.PersonDeletion{At: time.UnixMilli(changedAt).UTC()}
		if mergedInto.Valid {
			c.Deleted.MergedInto = &mergedInto.String
		}
	}
	return c, nil
}

// ChangesHead reads the position after every change committed now.
func (s *Store) ChangesHead(ctx context.Context, accountID string) (_ domain.ChangePosition, err error) {
	defer named("ChangesHead", &err)
	var head domain.ChangePosition
	err = s.safeReadTx(ctx, func(q querier) (err error) {
		head, err = changesHead(ctx, q, s.dialect.Changes, accountID)
		return err
	})
	if err != nil {
		return head, fmt.Errorf("sqlstore: ChangesHead: %w", err)
	}
	return head, nil
}

func changesHead(ctx context.Context, q querier, f ChangeFeed, accountID string) (domain.ChangePosition, error) {
	var head domain.ChangePosition
	err := q.queryRow(ctx, f.Head, accountID).Scan(&head.Base, &head.Seq)
	return head, err
}

// PruneChanges deletes tombstones made before before, a batch at a time.
func (s *Store) PruneChanges(ctx context.Context, before time.Time, batch int) (_ int, err error) {
	defer named("PruneChanges", &err)
	res, err := s.writer().exec(ctx, `DELETE FROM person_changes WHERE (account_id, person_id) IN (
		SELECT account_id, person_id FROM person_changes WHERE deleted = true AND changed_at < $1 LIMIT $2)`,
		before.UnixMilli(), batch)
	if err != nil {
		return 0, fmt.Errorf("sqlstore: PruneChanges: %w", err)
	}
	// A merged id answers urn:pds:problem:merged as long as its tombstone
	// is kept, and a plain 404 after (its aliases stay the survivor's).
	if _, err := s.writer().exec(ctx, `DELETE FROM person_merges WHERE (account_id, person_id) IN (
		SELECT account_id, person_id FROM person_merges WHERE merged_at < $1 LIMIT $2)`, before.UnixMilli(), batch); err != nil {
		return 0, fmt.Errorf("sqlstore: PruneChanges: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// stampTombstone gives the tombstone of a person just deleted the time of
// the write that deleted it.
func stampTombstone(ctx context.Context, q querier, accountID, personID string, at time.Time) error {
	_, err := q.exec(ctx, `UPDATE person_changes SET changed_at = $3 WHERE account_id = $1 AND person_id = $2`,
		accountID, personID, at.UnixMilli())
	return err
}

// OpenExport begins a read transaction that every chunk of the export,
// and the feed's position, read: the snapshot is the one its first
// statement takes. With replicas it is one replica's for the whole stream,
// taken after that replica replayed everything acknowledged before the
// request arrived; a replica that cannot begin it leaves it to the
// primary, but one lost during the stream ends it, as the primary's loss
// would (no other server holds that snapshot).
func (s *Store) OpenExport(ctx context.Context, accountID string) (_ store.PersonExport, err error) {
	defer named("OpenExport", &err)
	var (
		db *sql.DB
		tx *sql.Tx
	)
	err = s.safeReadAt(ctx, s.readsAt(ctx), func(on *sql.DB) (err error) {
		db = on
		tx, err = on.BeginTx(ctx, s.dialect.ReadSnapshot)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlstore: OpenExport: %w", err)
	}
	q, done := s.txQuerier(ctx, db, tx)
	return &snapshotExport{s: s, tx: tx, q: q, done: done, account: accountID}, nil
}

// snapshotExport is an export's read transaction.
type snapshotExport struct {
	s       *Store
	tx      *sql.Tx
	q       querier
	done    func()
	account string
}

func (e *snapshotExport) Position(ctx context.Context) (domain.ChangePosition, error) {
	pos, err := changesHead(ctx, e.q, e.s.dialect.Changes, e.account)
	if err != nil {
		return pos, fmt.Errorf("sqlstore: export Position: %w", err)
	}
	return pos, nil
}

func (e *snapshotExport) Read(ctx context.Context, sel domain.PersonExport, limit int) ([]domain.Person, error) {
	persons, err := e.s.exportChunk(ctx, e.q, e.account, sel, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: export Read: %w", err)
	}
	return persons, nil
}

func (e *snapshotExport) Close() error {
	e.done()
	return e.tx.Rollback()
}
