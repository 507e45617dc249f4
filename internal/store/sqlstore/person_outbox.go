package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/store"
)

// change is what a write did to a person; service.StampsFor decides what
// recording it writes.
type change = service.PersonChange

const (
	noChange       = service.NoChange
	upsertNoChange = service.UpsertNoChange
	seenOnly       = service.SeenOnly
	changed        = service.Changed
	// createdNew: the insert stamped the person already (insertPerson).
	createdNew = service.Created
)

// writeAttempts bounds the retries of a person write that lost a race on a
// unique identifier (PostgreSQL with concurrent writers): the next attempt
// sees the winner's row and matches it or reports the conflict.
const writeAttempts = 3

// personWrite is one write of a person, as changeAndRecord runs it.
type personWrite struct {
	accountID string
	w         store.Write
	// load, when set, gives the person as it stands after the change
	// (loader); nil when the caller wants no person back.
	load loader
	// attrs, when set, is where apply leaves a patch's new attributes, for
	// recordChange to write with the stamps.
	attrs *attrUpdate
	// apply makes the change in the transaction and reports what it did.
	apply func(q querier) (personID string, c change, err error)
}

// changePerson runs one person write (changeAndRecord) in a transaction of
// its own.
func (s *Store) changePerson(ctx context.Context, pw personWrite) (*domain.Person, change, error) {
	var (
		p *domain.Person
		c change
	)
	err := s.writeRetrying(ctx, func(q querier) (err error) {
		p, c, err = changeAndRecord(ctx, q, pw)
		return err
	})
	return p, c, err
}

// writeRetrying runs fn in a write transaction, and again while it loses a
// race on a unique identifier (retryingUnique).
func (s *Store) writeRetrying(ctx context.Context, fn func(q querier) error) error {
	return s.retryingUnique(func() error { return s.inTx(ctx, fn) })
}

// retryingUnique runs write, and again, up to writeAttempts in all, while
// it loses a race on a unique identifier.
func (s *Store) retryingUnique(write func() error) error {
	var err error
	for attempt := 1; attempt <= writeAttempts; attempt++ {
		err = write()
		if err == nil || !s.isUnique(err) {
			break
		}
	}
	return err
}

// changeAndRecord is the one write path of persons: every creation and
// change of a person, from every operation (a batch, once per item), runs
// pw.apply in a transaction and records what it reports it did in that same
// transaction (recordChange), so that a change is in the outbox exactly
// when it commits. When pw.load is set it gives the person as it stands
// after the change: what the write itself knows, or else a read after
// every write of the transaction (on an engine whose WITH clause may
// write, in the statement that writes the outbox row).
func changeAndRecord(ctx context.Context, q querier, pw personWrite) (*domain.Person, change, error) {
	id, c, err := pw.apply(q)
	if err != nil {
		return nil, c, err
	}
	r := recorded{accountID: pw.accountID, personID: id, c: c, w: pw.w}
	if pw.attrs != nil {
		r.attrs = *pw.attrs
	}
	var known *domain.Person
	if pw.load != nil {
		known = pw.load(id)
	}
	read, err := recordChange(ctx, q, r, pw.load != nil && known == nil)
	switch {
	case err != nil:
		return nil, c, err
	case pw.load == nil:
		return nil, c, nil
	case known != nil:
		return known, c, nil
	case read != nil:
		return read, c, nil
	}
	p, err := getPerson(ctx, q, pw.accountID, id)
	return p, c, err
}

// loader gives the person after a write when the write knows it whole (a
// person it created), nil when it is to be read back.
type loader func(personID string) *domain.Person

// readBack has the person read back after its write.
func readBack(string) *domain.Person { return nil }

// upsertResultArgs holds each upsert_result boxed once: a string variable
// passed as a query argument would cost a person write an allocation.
var upsertResultArgs = map[string]any{
	domain.UpsertCreated: domain.UpsertCreated, domain.UpsertUpdated: domain.UpsertUpdated, domain.UpsertUnchanged: domain.UpsertUnchanged,
}

// recorded is a change to record: what a write did to a person (c), and a
// patch's new attributes (attrs, nil for none).
type recorded struct {
	accountID, personID string
	c                   change
	attrs               attrUpdate
	w                   store.Write
}

// recordChange writes a patch's new attributes (attrs, nil for none),
// stamps the person as service.StampsFor decides and, for a change that is
// an event, enters it in the person's outbox row as
// service.BurstAfterChange decides. The attributes and the stamps go in one
// UPDATE: on PostgreSQL each UPDATE of a person writes a row version and an
// entry in every index of persons.
//
// Where the dialect's Outbox can (a WITH clause may write, and each round
// trip to the server counts), the UPDATE also reads the outbox row it
// decides on, and the outbox write also reads the person back when
// readAfter asks for it (returned; nil when it was not read).
func recordChange(ctx context.Context, q querier, r recorded, readAfter bool) (*domain.Person, error) {
	accountID, personID, c, w := r.accountID, r.personID, r.c, r.w
	stamps := service.StampsFor(c)
	update, args, err := stampsUpdate(c, stamps, r.attrs, accountID, personID, w)
	if err != nil {
		return nil, err
	}
	// A person created in this transaction has no outbox row yet.
	// Otherwise the row is read locked: writers of one person take turns
	// on the persons row stamped here already, but a closing worker
	// changes or deletes this row without that lock, and deciding on a
	// stale read would lose the change.
	var (
		cur          *service.Burst
		lockBurstToo bool
	)
	switch {
	case stamps.Event && c != createdNew && update != "":
		cur, lockBurstToo, err = q.s.dialect.Outbox.stampLocking(ctx, q, update, args)
	case update != "":
		_, err = q.exec(ctx, update, args...)
	}
	if err != nil || !stamps.Event {
		return nil, err
	}
	if c != createdNew && !lockBurstToo {
		if cur, err = lockBurst(ctx, q, personID, ""); err != nil {
			return nil, err
		}
	}
	var wargs sqlArgs
	write := burstWrite(&wargs, cur, accountID, personID, service.BurstAfterChange(cur, c == createdNew, w.Now, w.Window))
	if !readAfter {
		_, err = q.exec(ctx, write, wargs...)
		return nil, err
	}
	return q.s.dialect.Outbox.writeReading(ctx, q, write, wargs, accountID, personID)
}

// stampsUpdate is the UPDATE of persons that writes attrs and the stamps,
// with its arguments; "" when there is nothing to write (a creation, which
// insertPerson stamped already, or a change that stamps nothing).
func stampsUpdate(c change, stamps service.Stamps, attrs attrUpdate, accountID, personID string, w store.Write) (string, sqlArgs, error) {
	var args sqlArgs
	now := w.Now.UnixMilli()
	var set string
	switch {
	case c == createdNew:
		return "", nil, nil
	case attrs != nil && stamps.LastSeen && stamps.UpsertResult != "":
		set = attrs.assignments(&args) + `, last_seen_at = ` + args.add(now) + `, upsert_result = ` + args.add(upsertResultArgs[stamps.UpsertResult])
	case attrs != nil:
		// Only applyPatch hands attributes over, with a change that stamps
		// both; anything else is a caller's mistake, refused rather than
		// written half.
		return "", nil, fmt.Errorf("sqlstore: change %d carries new attributes but does not stamp last_seen_at and upsert_result", c)
	case stamps.LastSeen && stamps.UpsertResult != "":
		set = `last_seen_at = ` + args.add(now) + `, upsert_result = ` + args.add(upsertResultArgs[stamps.UpsertResult])
	case stamps.LastSeen:
		set = `last_seen_at = ` + args.add(now)
	case stamps.UpsertResult != "":
		set = `upsert_result = ` + args.add(upsertResultArgs[stamps.UpsertResult])
	default:
		return "", nil, nil
	}
	return `UPDATE persons SET ` + set + ` WHERE account_id = ` + args.add(accountID) + ` AND id = ` + args.add(personID), args, nil
}

// burstWrite is the statement that makes next the person's outbox row:
// an INSERT when there is none (cur nil), else an UPDATE; its arguments
// are added to args.
func burstWrite(args *sqlArgs, cur *service.Burst, accountID, personID string, next service.Burst) string {
	if cur == nil {
		return `INSERT INTO bursts (` + newBurstColumns + `) VALUES (` + args.list(newBurstRow(accountID, personID, next)...) + `)`
	}
	return `UPDATE bursts SET ` + burstAssignments(args, next) + ` WHERE person_id = ` + args.add(personID)
}

// burstAssignments is the SET list of an UPDATE that makes an outbox row
// next.
func burstAssignments(args *sqlArgs, next service.Burst) string {
	return `event = ` + args.add(next.Event) + `, opened_at = ` + args.add(next.OpenedAt.UnixMilli()) +
		`, last_change_at = ` + args.add(next.LastChangeAt.UnixMilli()) + `, due_at = ` + args.add(next.DueAt.UnixMilli()) +
		`, next_opened_at = ` + args.add(nullMillis(next.NextOpenedAt)) + `, next_due_at = ` + args.add(nullMillis(next.NextDueAt))
}

// newBurstColumns are the columns of a person's first outbox row, in the
// order of newBurstRow; recordChange and createUnlessHeld share them.
const newBurstColumns = `person_id, account_id, event, opened_at, last_change_at, due_at`

func newBurstRow(accountID, personID string, b service.Burst) []any {
	return []any{personID, accountID, b.Event, b.OpenedAt.UnixMilli(), b.LastChangeAt.UnixMilli(), b.DueAt.UnixMilli()}
}

// burstColumns are the columns of an outbox row scanBurst reads.
const burstColumns = `event, opened_at, last_change_at, due_at, next_opened_at, next_due_at`

// lockBurst reads a person's outbox row for a write that decides on it,
// locked on PostgreSQL until the transaction ends (SQLite's writer is
// single already); nil when there is none. With a lease token, only the row
// that lease still holds.
func lockBurst(ctx context.Context, q querier, personID, leaseToken string) (*service.Burst, error) {
	var args sqlArgs
	where := `person_id = ` + args.add(personID)
	if leaseToken != "" {
		where += ` AND lease_token = ` + args.add(leaseToken)
	}
	return scanBurst(q.queryRow(ctx, `SELECT `+burstColumns+` FROM bursts WHERE `+where+q.s.dialect.LockRows, args...))
}

// scanBurst scans the burstColumns of an outbox row; nil when there is none.
func scanBurst(row scanner) (*service.Burst, error) {
	var (
		event               string
		opened, last, due   int64
		nextOpened, nextDue sql.NullInt64
	)
	err := row.Scan(&event, &opened, &last, &due, &nextOpened, &nextDue)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return burstOf(event, opened, last, due, nextOpened, nextDue), nil
}

// burstOf is the outbox row of the burstColumns read.
func burstOf(event string, opened, last, due int64, nextOpened, nextDue sql.NullInt64) *service.Burst {
	return &service.Burst{Event: event, OpenedAt: domain.FromMillis(opened), LastChangeAt: domain.FromMillis(last),
		DueAt: domain.FromMillis(due), NextOpenedAt: timePtr(nextOpened), NextDueAt: timePtr(nextDue)}
}

// PendingBurst reads the open burst of a person.
func (s *Store) PendingBurst(ctx context.Context, accountID, personID string) (_ *store.PersonBurst, err error) {
	defer named("PendingBurst", &err)
	var b store.PersonBurst
	var opened, last, due int64
	err = s.reader().queryRow(ctx, `SELECT person_id, event, opened_at, last_change_at, due_at
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
