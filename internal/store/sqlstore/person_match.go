package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"slices"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/store"
)

// Upsert Person onto the person it matches, in one statement, where the
// engine can (Dialect.RowVersion and RefuseStale).
//
// On PostgreSQL a matched upsert ran a transaction of its own after the
// statement that found the holder (createUnlessHeld): BEGIN, the locked read
// of the person, the UPDATE that locked its outbox row, the outbox write and
// COMMIT, each a round trip. That statement now also reads what the decision
// needs (the holder's attributes and outbox row, each with its row version),
// matchHeld decides on them as the transaction would, and one statement
// writes the person and its outbox row only if both are still the versions
// read. When either changed in between (another write of the person, the
// webhook worker closing its burst), that statement writes nothing and the
// upsert runs in its transaction, as before.

// heldRow is a holder of an identifier as the create's statement read it.
type heldRow struct {
	service.Holder
	attrs   attributes
	version string
	// burst is its outbox row (nil: none), burstVersion that row's version.
	burst        *service.Burst
	burstVersion string
}

// staleState is the SQLSTATE with which Dialect.RefuseStale fails.
const staleState = "PDS01"

// heldSelect is the SELECT, from the holders h that heldLookup read, of
// what scanHeld reads: each holder with its outbox row's columns and
// version. numbered reads h.n first (createManyQuery's call number).
func heldSelect(d Dialect, numbered bool) string {
	n := ``
	if numbered {
		n = `h.n, `
	}
	return `SELECT ` + n + `h.id, h.external_id, h.email_norm, h.f_id, h.email, h.first_name, h.last_name, h.phone, h.version,
		o.event, o.opened_at, o.last_change_at, o.due_at, o.next_opened_at, o.next_due_at, ` + rowVersion(d, `o.`) + `
		FROM h LEFT JOIN bursts o ON o.person_id = h.id`
}

// heldLookup is what the create's lookup reads of a person of alias
// (written with its dot, or ""), for heldSelect.
func heldLookup(d Dialect, a string) string {
	return a + `id, ` + a + `external_id, ` + a + `email_norm, ` + a + `f_id, ` + a + `email, ` + a + `first_name, ` +
		a + `last_name, ` + a + `phone, ` + rowVersion(d, a) + ` AS version`
}

// rowVersion is Dialect.RowVersion of the row of alias; NULL on an engine
// without one, where matchHeld never writes.
func rowVersion(d Dialect, alias string) string {
	if d.RowVersion == "" {
		return `NULL`
	}
	return alias + d.RowVersion
}

// scanHeld reads one row of heldSelect; n, when set, receives the call
// number.
func scanHeld(rows *sql.Rows, n *int) (heldRow, error) {
	var (
		r                                    heldRow
		emailNorm, event                     sql.NullString
		version, burstVersion                sql.NullString
		opened, last, due, nextOpen, nextDue sql.NullInt64
	)
	dest := []any{&r.ID, &r.attrs.ExternalID, &emailNorm, &r.attrs.FID, &r.attrs.Email, &r.attrs.firstName, &r.attrs.lastName,
		&r.attrs.phone, &version, &event, &opened, &last, &due, &nextOpen, &nextDue, &burstVersion}
	if n != nil {
		dest = append([]any{n}, dest...)
	}
	if err := rows.Scan(dest...); err != nil {
		return r, err
	}
	r.ExternalID, r.EmailNorm, r.FID = deref(r.attrs.ExternalID), emailNorm.String, deref(r.attrs.FID)
	r.version, r.burstVersion = version.String, burstVersion.String
	if event.Valid {
		r.burst = burstOf(event.String, opened.Int64, last.Int64, due.Int64, nextOpen, nextDue)
	}
	return r, nil
}

// addHeld adds r to held, once: a person holding two of the identifiers
// comes once per index.
func addHeld(held []heldRow, r heldRow) []heldRow {
	if slices.ContainsFunc(held, func(h heldRow) bool { return h.ID == r.ID }) {
		return held
	}
	return append(held, r)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// holdersOf is the holders of held, for service.UpsertTarget.
func holdersOf(held []heldRow) []service.Holder {
	out := make([]service.Holder, len(held))
	for i, h := range held {
		out[i] = h.Holder
	}
	return out
}

// matchHeld is Upsert Person onto one of held, the holders of in's
// identifiers read by the create's statement (holders: holdersOf(held),
// which the caller's transaction decides on too), written by one statement
// outside a transaction. It answers with the person after the write, or
// the error the transaction would give (a 409), or neither when it wrote
// nothing: the engine cannot, the decision needs more than held, or the
// person or its outbox row changed since they were read. Then the caller
// runs the upsert in its transaction.
func (s *Store) matchHeld(ctx context.Context, accountID string, in domain.PersonUpsert, w store.Write, held []heldRow,
	holders []service.Holder) (*domain.Person, error) {
	if s.dialect.RowVersion == "" || s.dialect.RefuseStale == "" {
		return nil, nil
	}
	target, err := service.UpsertTarget(in.Identifiers(), holders)
	if err != nil || target.Create {
		return nil, err
	}
	i := slices.IndexFunc(held, func(h heldRow) bool { return h.ID == target.ID })
	if i < 0 {
		return nil, nil
	}
	row := held[i]
	if s.beforeMatchWrite != nil {
		s.beforeMatchWrite()
	}
	// createUnlessHeld leaves upserts with custom field values to the
	// transaction, so only attributes can change here.
	attrs := patchAttributes(row.attrs, in)
	c := upsertNoChange
	if attrs != nil {
		c = changed
	}
	stamps := service.StampsFor(c)
	update, args, err := stampsUpdate(c, stamps, attrs, accountID, row.ID, w)
	if err != nil || update == "" {
		return nil, err
	}
	// The holders were read while the account suppressed nothing (else
	// the create's statement marks them, suppressingMark, and the upsert
	// runs in its transaction): should a suppression have been made
	// since, this writes nothing and the transaction checks.
	query := `WITH u AS (` + update + ` AND ` + s.dialect.RowVersion + ` = ` + args.add(row.version) +
		` AND NOT EXISTS (SELECT 1 FROM suppressions WHERE account_id = ` + args.add(accountID) + `) RETURNING *)`
	written := `TRUE`
	if stamps.Event {
		next := service.BurstAfterChange(row.burst, false, w.Now, w.Window)
		// Each write names the person u wrote, so the person's row is
		// locked before its outbox row, as in recordChange.
		var write string
		if row.burst == nil {
			write = `INSERT INTO bursts (` + newBurstColumns + `) SELECT ` + args.list(newBurstRow(accountID, row.ID, next)...) + ` FROM u`
		} else {
			write = `UPDATE bursts SET ` + burstAssignments(&args, next) + ` WHERE person_id = (SELECT id FROM u) AND ` +
				s.dialect.RowVersion + ` = ` + args.add(row.burstVersion)
		}
		query += `, b AS (` + write + ` RETURNING person_id)`
		// A person written without its outbox row would be a change no
		// subscription hears of: the statement fails, and writes neither.
		written = `CASE WHEN EXISTS (SELECT 1 FROM b) THEN TRUE ELSE ` + s.dialect.RefuseStale + ` END`
	}
	p, err := scanPersonWithDetails(s.writer().queryRow(ctx, query+` `+personWithDetailsSQL(s.dialect, `u p`, written, ``), args...))
	var refused interface{ SQLState() string }
	if errors.Is(err, sql.ErrNoRows) || errors.As(err, &refused) && refused.SQLState() == staleState {
		return nil, nil
	}
	return p, err
}
