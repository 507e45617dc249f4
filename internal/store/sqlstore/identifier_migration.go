package sqlstore

import (
	"context"
	"database/sql"
	"strconv"
	"strings"

	"github.com/pressly/goose/v3"

	"github.com/pds-dev/pds/internal/domain"
)

// NormalIdentifiersVersion is the migration that puts identifiers stored
// before the normal form (domain.NormalIdentifier) into it: a Go migration
// of each engine, since neither engine's SQL has the normal form (SQLite
// has no NFKC, and PostgreSQL's lower() follows the database's locale).
const NormalIdentifiersVersion = 210

// NormalIdentifiersMigration is that migration for an engine. nonASCII
// is the engine's condition, of a column written %s, that holds for a value
// with a character outside printable ASCII (a control character too): a
// value without one is in normal form once lower-cased (an email) and
// free of white space at its ends, which plain SQL checks, so only the
// few rows that may not be are read into Go.
//
// A value whose normal form differs is rewritten to it; one the normal
// form refuses (a zero-width space, white space at an end, a control
// character), or whose normal form another person of the account holds,
// is left as it is: it matches no write any more, since every write is put in normal form first, and the person is
// found by its id. Breadcrumbs' identifiers are rewritten the same way.
// Suppression hashes cannot be: an erasure before this version suppressed
// an email lower-cased and a phone as written, which the check of a write
// still tries (domain.CheckedValues).
func NormalIdentifiersMigration(nonASCII func(column string) string) *goose.Migration {
	up := func(ctx context.Context, tx *sql.Tx) error {
		if err := normalizePersons(ctx, tx, nonASCII); err != nil {
			return err
		}
		return normalizeBreadcrumbs(ctx, tx, nonASCII)
	}
	// Down keeps the normal forms: they are valid in the schema before.
	return goose.NewGoMigration(NormalIdentifiersVersion, &goose.GoFunc{RunTx: up}, &goose.GoFunc{RunTx: func(context.Context, *sql.Tx) error { return nil }})
}

// candidates is the condition of rows whose identifiers may not be in
// normal form.
func candidates(nonASCII func(string) string, columns ...string) string {
	where := ""
	for i, c := range columns {
		if i > 0 {
			where += " OR "
		}
		where += nonASCII(c) + " OR " + c + " LIKE ' %' OR " + c + " LIKE '% '"
		if c == "email" {
			where += " OR email <> lower(email)"
		}
	}
	return where
}

type storedIdentifiers struct {
	id, account                   string
	email, externalID, fID, phone sql.NullString
}

func normalizePersons(ctx context.Context, tx *sql.Tx, nonASCII func(string) string) error {
	rows, err := tx.QueryContext(ctx, `SELECT id, account_id, email, external_id, f_id, phone FROM persons WHERE `+
		candidates(nonASCII, "email", "external_id", "f_id", "phone"))
	if err != nil {
		return err
	}
	var found []storedIdentifiers
	for rows.Next() {
		var r storedIdentifiers
		if err := rows.Scan(&r.id, &r.account, &r.email, &r.externalID, &r.fID, &r.phone); err != nil {
			rows.Close()
			return err
		}
		found = append(found, r)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	for _, r := range found {
		var sets []string
		var args []any
		set := func(column string, v any) {
			args = append(args, v)
			sets = append(sets, column+" = $"+strconv.Itoa(len(args)))
		}
		for _, c := range []struct {
			kind, column, unique string
			v                    sql.NullString
		}{
			{domain.KindEmail, "email", "email_norm", r.email},
			{domain.KindExternalID, "external_id", "external_id", r.externalID},
			{domain.KindFID, "f_id", "f_id", r.fID},
			{domain.KindPhone, "phone", "", r.phone},
		} {
			n, ok := normalOrKept(c.kind, c.v)
			if !ok {
				continue
			}
			if c.unique != "" {
				var holder string
				err := tx.QueryRowContext(ctx, `SELECT id FROM persons WHERE account_id = $1 AND `+c.unique+` = $2 AND id <> $3`,
					r.account, n, r.id).Scan(&holder)
				if err == nil {
					continue // held by another person: kept as it was
				}
				if err != sql.ErrNoRows {
					return err
				}
			}
			set(c.column, n)
			if c.kind == domain.KindEmail {
				set("email_norm", n)
			}
		}
		if len(sets) == 0 {
			continue
		}
		args = append(args, r.id)
		query := `UPDATE persons SET ` + strings.Join(sets, ", ") + ` WHERE id = $` + strconv.Itoa(len(args))
		if _, err := tx.ExecContext(ctx, query, args...); err != nil {
			return err
		}
	}
	return nil
}

func normalizeBreadcrumbs(ctx context.Context, tx *sql.Tx, nonASCII func(string) string) error {
	rows, err := tx.QueryContext(ctx, `SELECT id, email, external_id, f_id FROM breadcrumbs WHERE `+
		candidates(nonASCII, "email", "external_id", "f_id"))
	if err != nil {
		return err
	}
	var found []storedIdentifiers
	for rows.Next() {
		var r storedIdentifiers
		if err := rows.Scan(&r.id, &r.email, &r.externalID, &r.fID); err != nil {
			rows.Close()
			return err
		}
		found = append(found, r)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	for _, r := range found {
		var sets []string
		var args []any
		for _, c := range []struct {
			kind, column string
			v            sql.NullString
		}{{domain.KindEmail, "email", r.email}, {domain.KindExternalID, "external_id", r.externalID}, {domain.KindFID, "f_id", r.fID}} {
			if n, ok := normalOrKept(c.kind, c.v); ok {
				args = append(args, n)
				sets = append(sets, c.column+" = $"+strconv.Itoa(len(args)))
			}
		}
		if len(sets) == 0 {
			continue
		}
		args = append(args, r.id)
		if _, err := tx.ExecContext(ctx, `UPDATE breadcrumbs SET `+strings.Join(sets, ", ")+` WHERE id = $`+strconv.Itoa(len(args)), args...); err != nil {
			return err
		}
	}
	return nil
}

// normalOrKept is v's normal form, and whether it is to be written: not
// when v is absent, already normal, or refused by the normal form.
func normalOrKept(kind string, v sql.NullString) (string, bool) {
	if !v.Valid || v.String == "" {
		return "", false
	}
	n, err := domain.NormalIdentifier(kind, v.String)
	if err != nil || n == v.String {
		return "", false
	}
	return n, true
}
