package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// UpsertPerson matches or creates a person and applies the supplied fields.
func (s *Store) UpsertPerson(ctx context.Context, accountID string, in domain.PersonUpsert, w store.Write) (*domain.Person, bool, error) {
	p, c, err := s.personWrite(ctx, accountID, w, true, func(q querier) (string, change, error) {
		return upsertPerson(ctx, q, accountID, in, w)
	})
	return p, c == createdNew, err
}

// upsertPerson is the part of UpsertPerson inside its transaction (also run
// for each line of an import): match, conflict, create or patch. The caller
// records the change it reports.
func upsertPerson(ctx context.Context, q querier, accountID string, in domain.PersonUpsert, w store.Write) (string, change, error) {
	values, err := checkCustomValues(ctx, q, accountID, in.CustomFields)
	if err != nil {
		return "", 0, err
	}
	ids := identifiers{externalID: in.ExternalID.Ptr(), email: in.Email.Ptr(), fID: in.FID.Ptr()}
	holders, err := identifierHolders(ctx, q, accountID, ids)
	if err != nil {
		return "", 0, err
	}
	match := holders.match(ids)
	if match == "" {
		id := domain.NewID(domain.PersonIDPrefix)
		attrs := attributes{identifiers: ids, firstName: in.FirstName.Ptr(), lastName: in.LastName.Ptr(), phone: in.Phone.Ptr()}
		if err := insertPerson(ctx, q, accountID, id, attrs, w); err != nil {
			return "", 0, err
		}
		_, err := applyCustomValues(ctx, q, accountID, id, values)
		return id, createdNew, err
	}
	// Every supplied identifier is applied to the match, so one held by
	// another person is a conflict.
	for _, h := range holders {
		if h.id != match {
			return "", 0, identifierConflict(h, ids)
		}
	}
	didChange, err := applyPatch(ctx, q, accountID, match, in, values)
	if err != nil || !didChange {
		return match, upsertNoChange, err
	}
	return match, changed, nil
}

// UpdatePerson applies a patch to an existing person.
func (s *Store) UpdatePerson(ctx context.Context, accountID, id string, in domain.PersonUpdate, w store.Write) (*domain.Person, error) {
	p, _, err := s.personWrite(ctx, accountID, w, true, func(q querier) (string, change, error) {
		if err := personExists(ctx, q, accountID, id); err != nil {
			return "", 0, err
		}
		values, err := checkCustomValues(ctx, q, accountID, in.CustomFields)
		if err != nil {
			return "", 0, err
		}
		if email := in.Email.Ptr(); email != nil {
			ids := identifiers{email: email}
			holders, err := identifierHolders(ctx, q, accountID, ids)
			if err != nil {
				return "", 0, err
			}
			for _, h := range holders {
				if h.id != id {
					return "", 0, identifierConflict(h, ids)
				}
			}
		}
		didChange, err := applyPatch(ctx, q, accountID, id, in.AsUpsert(), values)
		if err != nil || !didChange {
			return id, noChange, err
		}
		return id, changed, nil
	})
	return p, err
}

// AddPersonTags attaches live tags; all of them or, on an unknown id, none.
func (s *Store) AddPersonTags(ctx context.Context, accountID, id string, tagIDs []string, w store.Write) (*domain.Person, error) {
	p, _, err := s.personWrite(ctx, accountID, w, true, func(q querier) (string, change, error) {
		if err := personExists(ctx, q, accountID, id); err != nil {
			return "", 0, err
		}
		tags := dedupe(tagIDs)
		if len(tags) == 0 {
			return "", 0, domain.BodyError("/tag_ids", "tag_ids must hold at least one tag id.")
		}
		live, err := liveTags(ctx, q, accountID, tags)
		if err != nil {
			return "", 0, err
		}
		for _, t := range tags {
			if !live[t] {
				return "", 0, domain.NotFound("tag", t)
			}
		}
		added := false
		for _, t := range tags {
			res, err := q.exec(ctx, `INSERT INTO person_tags (account_id, person_id, tag_id, created_at) VALUES ($1, $2, $3, $4)
				ON CONFLICT (person_id, tag_id) DO NOTHING`, accountID, id, t, w.Now.UnixMilli())
			if err != nil {
				return "", 0, err
			}
			if n, _ := res.RowsAffected(); n > 0 {
				added = true
			}
		}
		if !added {
			return id, noChange, nil
		}
		return id, changed, nil
	})
	return p, err
}

// RemovePersonTag detaches a live tag. An archived tag is invisible, so its
// link is kept (a revived tag is back on its persons) and nothing changes.
func (s *Store) RemovePersonTag(ctx context.Context, accountID, id, tagID string, w store.Write) error {
	_, _, err := s.personWrite(ctx, accountID, w, false, func(q querier) (string, change, error) {
		if err := personExists(ctx, q, accountID, id); err != nil {
			return "", 0, err
		}
		res, err := q.exec(ctx, `DELETE FROM person_tags WHERE account_id = $1 AND person_id = $2 AND tag_id = $3
			AND tag_id IN (SELECT id FROM tags WHERE account_id = $4 AND archived_at IS NULL)`, accountID, id, tagID, accountID)
		if err != nil {
			return "", 0, err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return id, noChange, nil
		}
		return id, changed, nil
	})
	return err
}

func liveTags(ctx context.Context, q querier, accountID string, ids []string) (map[string]bool, error) {
	var args sqlArgs
	account, in := args.add(accountID), args.inList(ids)
	rows, err := q.query(ctx, `SELECT id FROM tags WHERE account_id = `+account+` AND archived_at IS NULL AND id IN (`+in+`)`,
		args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	live := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		live[id] = true
	}
	return live, rows.Err()
}

func personExists(ctx context.Context, q querier, accountID, id string) error {
	var one int
	err := q.queryRow(ctx, `SELECT 1 FROM persons WHERE account_id = $1 AND id = $2`, accountID, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return domain.NotFound("person", id)
	}
	return err
}

// identifiers are the stable keys a person is matched by.
type identifiers struct {
	externalID, email, fID *string
}

func (ids identifiers) any() bool { return ids.externalID != nil || ids.email != nil || ids.fID != nil }

// holder is a person holding at least one of the identifiers looked up.
type holder struct {
	id                     string
	externalID, email, fID sql.NullString
}

type holders []holder

// identifierHolders finds every person holding one of the given identifiers
// (at most three), each identifier looked up on its own unique index.
func identifierHolders(ctx context.Context, q querier, accountID string, ids identifiers) (holders, error) {
	if !ids.any() {
		return nil, nil
	}
	query, args := holdersQuery(accountID, ids)
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out holders
	for rows.Next() {
		var h holder
		if err := rows.Scan(&h.id, &h.externalID, &h.email, &h.fID); err != nil {
			return nil, err
		}
		// A person holding two of the identifiers comes once per index.
		if !slices.ContainsFunc(out, func(o holder) bool { return o.id == h.id }) {
			out = append(out, h)
		}
	}
	return out, rows.Err()
}

// holdersQuery is a UNION ALL of one SELECT per given identifier. A single
// SELECT with "external_id = ? OR email_norm = ? OR f_id = ?" is answered by
// SQLite through persons_last_seen, walking every person of the account; an
// equality on each unique index alone reads at most one entry of it.
func holdersQuery(accountID string, ids identifiers) (string, []any) {
	args := []any{accountID}
	var parts []string
	for _, c := range []struct {
		column string
		value  *string
	}{{"external_id", ids.externalID}, {"email_norm", ids.email}, {"f_id", ids.fID}} {
		if c.value == nil {
			continue
		}
		v := *c.value
		if c.column == "email_norm" {
			v = domain.NormEmail(v)
		}
		args = append(args, v)
		parts = append(parts, `SELECT id, external_id, email_norm, f_id FROM persons WHERE account_id = $1 AND `+
			c.column+` = $`+strconv.Itoa(len(args)))
	}
	return strings.Join(parts, ` UNION ALL `), args
}

// matchOrder is the order identifiers decide a match in.
var matchOrder = []string{"external_id", "email", "f_id"}

// holds lists, in match order, the identifiers of ids that h holds.
func (h holder) holds(ids identifiers) []string {
	var out []string
	if ids.externalID != nil && h.externalID.Valid && h.externalID.String == *ids.externalID {
		out = append(out, "external_id")
	}
	if ids.email != nil && h.email.Valid && h.email.String == domain.NormEmail(*ids.email) {
		out = append(out, "email")
	}
	if ids.fID != nil && h.fID.Valid && h.fID.String == *ids.fID {
		out = append(out, "f_id")
	}
	return out
}

// match applies the match order: external_id, then email, then f_id.
func (hs holders) match(ids identifiers) string {
	for _, name := range matchOrder {
		for _, h := range hs {
			if slices.Contains(h.holds(ids), name) {
				return h.id
			}
		}
	}
	return ""
}

// identifierConflict names the identifier another person holds.
func identifierConflict(h holder, ids identifiers) error {
	name := h.holds(ids)[0]
	return &domain.ConflictError{
		Detail:     fmt.Sprintf("Another person (%s) already holds this %s; identifiers are unique within an account.", h.id, name),
		ExistingID: h.id,
	}
}

// attributes are the person columns the API writes.
type attributes struct {
	identifiers
	firstName, lastName, phone *string
}

func insertPerson(ctx context.Context, q querier, accountID, id string, a attributes, w store.Write) error {
	var emailNorm any
	if a.email != nil {
		emailNorm = domain.NormEmail(*a.email)
	}
	now := w.Now.UnixMilli()
	_, err := q.exec(ctx, `INSERT INTO persons (id, account_id, email, email_norm, external_id, f_id,
		first_name, last_name, phone, upsert_result, created_at, last_seen_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		id, accountID, nullStr(a.email), emailNorm, nullStr(a.externalID), nullStr(a.fID),
		nullStr(a.firstName), nullStr(a.lastName), nullStr(a.phone), domain.UpsertCreated, now, now)
	return err
}

// applyPatch writes the supplied attributes and custom field values and
// reports whether anything differed from what was stored. Update Person
// comes here with external_id and f_id absent.
func applyPatch(ctx context.Context, q querier, accountID, id string, in domain.PersonUpsert, values []valueChange) (bool, error) {
	// The row lock keeps a concurrent write of another attribute from being
	// overwritten with the value read here (SQLite's write transactions are
	// exclusive already).
	cur, err := scanPerson(q.queryRow(ctx, `SELECT `+personColumns+` FROM persons WHERE account_id = $1 AND id = $2`+q.s.dialect.LockRows, accountID, id))
	if err != nil {
		return false, err
	}
	next := attributes{
		identifiers: identifiers{externalID: cur.ExternalID, email: cur.Email, fID: cur.FID},
		firstName:   cur.FirstName, lastName: cur.LastName, phone: cur.Phone,
	}
	set := func(dst **string, o domain.Opt[string]) {
		if o.Set {
			*dst = o.Ptr()
		}
	}
	set(&next.email, in.Email)
	set(&next.firstName, in.FirstName)
	set(&next.lastName, in.LastName)
	set(&next.phone, in.Phone)
	set(&next.externalID, in.ExternalID)
	set(&next.fID, in.FID)
	didChange := !sameText(next.email, cur.Email) || !sameText(next.externalID, cur.ExternalID) ||
		!sameText(next.fID, cur.FID) || !sameText(next.firstName, cur.FirstName) ||
		!sameText(next.lastName, cur.LastName) || !sameText(next.phone, cur.Phone)
	if didChange {
		var emailNorm any
		if next.email != nil {
			emailNorm = domain.NormEmail(*next.email)
		}
		if _, err := q.exec(ctx, `UPDATE persons SET email = $1, email_norm = $2, external_id = $3, f_id = $4,
			first_name = $5, last_name = $6, phone = $7 WHERE account_id = $8 AND id = $9`,
			nullStr(next.email), emailNorm, nullStr(next.externalID), nullStr(next.fID),
			nullStr(next.firstName), nullStr(next.lastName), nullStr(next.phone), accountID, id); err != nil {
			return false, err
		}
	}
	valuesChanged, err := applyCustomValues(ctx, q, accountID, id, values)
	return didChange || valuesChanged, err
}

func sameText(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// valueChange sets (value) or removes (nil) the value of one custom field;
// with clearAll, every live Person value of the person goes first.
type valueChange struct {
	fieldID  string
	value    *string
	clearAll bool
}

// checkCustomValues validates custom_fields against the live Person fields
// of the account: every key must name one, every value fit its data_type.
// All bad keys are reported together, each at /custom_fields/<key>.
func checkCustomValues(ctx context.Context, q querier, accountID string, in domain.Opt[map[string]json.RawMessage]) ([]valueChange, error) {
	if !in.Set {
		return nil, nil
	}
	if in.Null {
		return []valueChange{{clearAll: true}}, nil
	}
	if len(in.Value) == 0 {
		return nil, nil
	}
	fields, err := livePersonFields(ctx, q, accountID)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(in.Value))
	for k := range in.Value {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []valueChange
	bad := &domain.ValidationError{}
	for _, k := range keys {
		ptr := "/custom_fields/" + escapePointer(k)
		f, ok := fields[k]
		if !ok {
			bad.Errors = append(bad.Errors, domain.FieldError{Pointer: ptr,
				Detail: fmt.Sprintf("custom field %q is not a Person custom field of this account (unknown or archived).", k)})
			continue
		}
		raw := in.Value[k]
		if strings.TrimSpace(string(raw)) == "null" {
			out = append(out, valueChange{fieldID: f.id})
			continue
		}
		v, err := domain.StoreCustomValue(f.dataType, raw)
		if err != nil {
			bad.Errors = append(bad.Errors, domain.FieldError{Pointer: ptr,
				Detail: fmt.Sprintf("custom field %q (%s) %s.", k, f.dataType, err)})
			continue
		}
		out = append(out, valueChange{fieldID: f.id, value: &v})
	}
	if len(bad.Errors) > 0 {
		bad.Detail = bad.Errors[0].Detail
		if len(bad.Errors) > 1 {
			bad.Detail = fmt.Sprintf("%d custom field values are not accepted; see errors.", len(bad.Errors))
		}
		return nil, bad
	}
	return out, nil
}

// escapePointer escapes a key as a JSON pointer token (RFC 6901).
func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

type fieldDef struct{ id, dataType string }

func livePersonFields(ctx context.Context, q querier, accountID string) (map[string]fieldDef, error) {
	rows, err := q.query(ctx, `SELECT id, key, data_type FROM custom_fields
		WHERE account_id = $1 AND collection = 'Person' AND archived_at IS NULL`, accountID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]fieldDef{}
	for rows.Next() {
		var key string
		var f fieldDef
		if err := rows.Scan(&f.id, &key, &f.dataType); err != nil {
			return nil, err
		}
		out[key] = f
	}
	return out, rows.Err()
}

// applyCustomValues writes checked values and reports whether any stored
// value changed. Values of archived fields stay stored, untouched.
func applyCustomValues(ctx context.Context, q querier, accountID, personID string, values []valueChange) (bool, error) {
	didChange := false
	for _, v := range values {
		var (
			res sql.Result
			err error
		)
		switch {
		case v.clearAll:
			res, err = q.exec(ctx, `DELETE FROM person_field_values WHERE account_id = $1 AND person_id = $2
				AND field_id IN (SELECT id FROM custom_fields WHERE account_id = $3 AND collection = 'Person' AND archived_at IS NULL)`,
				accountID, personID, accountID)
		case v.value == nil:
			res, err = q.exec(ctx, `DELETE FROM person_field_values WHERE account_id = $1 AND person_id = $2 AND field_id = $3`,
				accountID, personID, v.fieldID)
		default:
			// The WHERE makes rewriting an equal value touch no row, which is
			// how a no-op is told from a change.
			res, err = q.exec(ctx, `INSERT INTO person_field_values (account_id, person_id, field_id, value) VALUES ($1, $2, $3, $4)
				ON CONFLICT (person_id, field_id) DO UPDATE SET value = excluded.value
				WHERE person_field_values.value <> excluded.value`, accountID, personID, v.fieldID, *v.value)
		}
		if err != nil {
			return false, err
		}
		if n, _ := res.RowsAffected(); n > 0 {
			didChange = true
		}
	}
	return didChange, nil
}
