package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/store"
)

// UpsertPerson matches or creates a person and applies the supplied fields.
// The dialect's Upserts goes first: PostgreSQL creates a new person in one
// statement without a transaction of its own (createUnlessHeld), and the
// transaction then only runs when that statement found the identifiers
// held; SQLite looks the identifiers up beside the writer.
func (s *Store) UpsertPerson(ctx context.Context, accountID string, in domain.PersonUpsert, w store.Write) (_ *domain.Person, _ bool, err error) {
	defer named("UpsertPerson", &err)
	// Callers normalize at the door; the store holds nothing else.
	if err := in.Normalize(); err != nil {
		return nil, false, err
	}
	s.warmSecret(ctx, accountID, w)
	var (
		p       *domain.Person
		created bool
	)
	err = s.retryingUnique(func() error {
		held, done, err := s.dialect.Upserts.first(ctx, s, accountID, in, w, &p, &created)
		if done {
			return err
		}
		return s.inTx(ctx, func(q querier) (err error) {
			p, created, err = upsertAndRecord(ctx, q, accountID, in, w, held)
			return err
		})
	})
	return p, created, err
}

// upsertAndRecord is one Upsert Person inside a transaction (UpsertPerson's
// own, or a batch item's savepoint): the upsert through changeAndRecord, and the
// person after it. held, when set, are the holders of in's identifiers as
// read just before the transaction; nil reads them in it.
func upsertAndRecord(ctx context.Context, q querier, accountID string, in domain.PersonUpsert, w store.Write,
	held *[]service.Holder) (*domain.Person, bool, error) {
	// A person this write creates is known whole without reading it back:
	// the row holds what was written and nothing else.
	var made *domain.Person
	load := func(id string) *domain.Person {
		if made != nil && made.ID == id {
			return made
		}
		return nil
	}
	var attrs attrUpdate
	p, c, err := changeAndRecord(ctx, q, personWrite{accountID: accountID, w: w, load: load, attrs: &attrs, apply: func(q querier) (string, change, error) {
		id, c, patched, created, err := applyUpsert(ctx, q, accountID, in, w, held)
		made, attrs = created, patched
		return id, c, err
	}})
	return p, c == createdNew, err
}

// applyUpsert is the part of UpsertPerson inside its transaction (also run
// for each line of an import): check the custom values, load what
// service.UpsertTarget decides on and whether a named identifier is
// suppressed, then create or patch. The caller records the change it
// reports. A person it creates it also returns, as a read would find it.
// held is as for upsertAndRecord: holders read before the transaction are as
// good as holders read in it, since neither read locks them (see
// identifierHolders); suppressions are not, and are read in it either way
// (see holdersAndSuppressed).
func applyUpsert(ctx context.Context, q querier, accountID string, in domain.PersonUpsert, w store.Write,
	held *[]service.Holder) (string, change, attrUpdate, *domain.Person, error) {
	values, err := checkCustomValues(ctx, q, accountID, in.CustomFields)
	if err != nil {
		return "", 0, nil, nil, err
	}
	ids := in.Identifiers()
	var holders []service.Holder
	if held != nil {
		holders = *held
		err = q.s.refuseSuppressed(ctx, q, accountID, upsertValues(in))
	} else {
		holders, err = holdersAndSuppressed(ctx, q, accountID, ids, upsertValues(in))
	}
	if err != nil {
		return "", 0, nil, nil, err
	}
	target, err := service.UpsertTarget(ids, holders)
	if err != nil {
		return "", 0, nil, nil, err
	}
	if target.Create {
		id := domain.NewID(domain.PersonIDPrefix)
		attrs := attributes{Identifiers: ids, firstName: in.FirstName.Ptr(), lastName: in.LastName.Ptr(), phone: in.Phone.Ptr()}
		if err := insertPerson(ctx, q, accountID, id, attrs, w); err != nil {
			return "", 0, nil, nil, err
		}
		if _, err := applyCustomValues(ctx, q, accountID, id, values); err != nil {
			return "", 0, nil, nil, err
		}
		return id, createdNew, nil, createdPerson(id, attrs, values, w), nil
	}
	attrs, didChange, err := applyPatch(ctx, q, accountID, target.ID, in, values, true)
	if errors.Is(err, errPersonErased) && held != nil {
		// Read before the transaction, the holder was erased since: the
		// transaction reads the holders again, and sees the erasure.
		return applyUpsert(ctx, q, accountID, in, w, nil)
	}
	if err != nil || !didChange {
		return target.ID, upsertNoChange, nil, nil, err
	}
	return target.ID, changed, attrs, nil, nil
}

// UpdatePerson applies a patch to an existing person.
func (s *Store) UpdatePerson(ctx context.Context, accountID, id string, in domain.PersonUpdate, w store.Write) (_ *domain.Person, err error) {
	defer named("UpdatePerson", &err)
	checked := in.AsUpsert()
	if err := checked.Normalize(); err != nil {
		return nil, err
	}
	in.Email, in.Phone = checked.Email, checked.Phone
	s.warmSecret(ctx, accountID, w)
	var attrs attrUpdate
	p, _, err := s.changePerson(ctx, personWrite{accountID: accountID, w: w, load: readBack, attrs: &attrs, apply: func(q querier) (string, change, error) {
		if err := lockPerson(ctx, q, accountID, id); err != nil {
			return "", 0, err
		}
		values, err := checkCustomValues(ctx, q, accountID, in.CustomFields)
		if err != nil {
			return "", 0, err
		}
		// Only an identifier no live person holds can be suppressed, and an
		// update must not give one back to a person.
		ids := domain.Identifiers{Email: in.Email.Ptr()}
		holders, err := holdersAndSuppressed(ctx, q, accountID, ids, domain.CheckedValues(in.Email.Ptr(), nil, nil, in.Phone.Ptr()))
		if err != nil {
			return "", 0, err
		}
		if err := service.CheckIdentifiersFree(id, ids, holders); err != nil {
			return "", 0, err
		}
		patched, didChange, err := applyPatch(ctx, q, accountID, id, in.AsUpsert(), values, false)
		attrs = patched
		if err != nil || !didChange {
			return id, noChange, err
		}
		return id, changed, nil
	}})
	return p, err
}

// AddPersonTags attaches live tags; all of them or, on an unknown id, none.
func (s *Store) AddPersonTags(ctx context.Context, accountID, id string, tagIDs []string, w store.Write) (_ *domain.Person, err error) {
	defer named("AddPersonTags", &err)
	p, _, err := s.changePerson(ctx, personWrite{accountID: accountID, w: w, load: readBack, apply: func(q querier) (string, change, error) {
		if err := lockPerson(ctx, q, accountID, id); err != nil {
			return "", 0, err
		}
		live, err := liveTags(ctx, q, accountID, tagIDs)
		if err != nil {
			return "", 0, err
		}
		tags, err := service.TagsToAttach(tagIDs, live)
		if err != nil {
			return "", 0, err
		}
		added := false
		for _, t := range sortedTags(tags) {
			res, err := q.exec(ctx, `INSERT INTO person_tags (account_id, person_id, tag_id, created_at, last_seen_at)
				SELECT $1, $2, $3, $4, p.last_seen_at FROM persons p WHERE p.account_id = $1 AND p.id = $2
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
	}})
	return p, err
}

// RemovePersonTag detaches a live tag. An archived tag is invisible, so its
// link is kept (a revived tag is back on its persons) and nothing changes.
func (s *Store) RemovePersonTag(ctx context.Context, accountID, id, tagID string, w store.Write) (err error) {
	defer named("RemovePersonTag", &err)
	_, _, err = s.changePerson(ctx, personWrite{accountID: accountID, w: w, apply: func(q querier) (string, change, error) {
		if err := lockPerson(ctx, q, accountID, id); err != nil {
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
	}})
	return err
}

// liveTags tells which of ids are live tags of the account.
func liveTags(ctx context.Context, q querier, accountID string, ids []string) (map[string]bool, error) {
	live := map[string]bool{}
	if len(ids) == 0 {
		return live, nil
	}
	var args sqlArgs
	account, in := args.add(accountID), args.inList(dedupe(ids))
	rows, err := q.query(ctx, `SELECT id FROM tags WHERE account_id = `+account+` AND archived_at IS NULL AND id IN (`+in+`)`,
		args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		live[id] = true
	}
	return live, rows.Err()
}

// identifierHolders finds every person holding one of the given identifiers
// (at most three), each identifier looked up on its own unique index. It
// takes no row locks: the unique indexes are the guard, and a writer that
// takes an identifier after this read makes ours fail unique, so that
// changePerson runs the decision again on fresh holders. Locking holders
// here would deadlock two updates swapping emails.
func identifierHolders(ctx context.Context, q querier, accountID string, ids domain.Identifiers) ([]service.Holder, error) {
	if !ids.Any() {
		return nil, nil
	}
	query, args := holdersOrSurvivorsQuery(accountID, ids)
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return scanHolders(rows)
}

// scanHolders reads rows of (id, external_id, email_norm, f_id), each
// holder once, and closes them.
func scanHolders(rows *sql.Rows) ([]service.Holder, error) {
	defer rows.Close()
	var out []service.Holder
	for rows.Next() {
		// One struct, so that scanning costs one allocation per row.
		var r struct {
			id                         string
			externalID, emailNorm, fID sql.NullString
		}
		if err := rows.Scan(&r.id, &r.externalID, &r.emailNorm, &r.fID); err != nil {
			return nil, err
		}
		out = addHolder(out, r.id, r.externalID, r.emailNorm, r.fID)
	}
	return out, rows.Err()
}

// addHolder adds a holder read from a row to holders, once: a person
// holding two of the identifiers comes once per index.
func addHolder(holders []service.Holder, id string, externalID, emailNorm, fID sql.NullString) []service.Holder {
	if slices.ContainsFunc(holders, func(h service.Holder) bool { return h.ID == id }) {
		return holders
	}
	return append(holders, service.Holder{ID: id, ExternalID: externalID.String, EmailNorm: emailNorm.String, FID: fID.String})
}

// holderColumns are what identifierHolders reads of a holder.
const holderColumns = `id, external_id, email_norm, f_id`

// holdersQuery is a UNION ALL of one SELECT of columns per given
// identifier. A single SELECT with "external_id = $2 OR email_norm = $3 OR
// f_id = $4" is answered by SQLite through persons_last_seen, walking every
// person of the account; an equality on each unique index alone reads at
// most one entry of it.
func holdersQuery(accountID string, ids domain.Identifiers, columns string) (string, []any) {
	var args sqlArgs
	parts := holderArms(&args, args.add(accountID), ids, func(k int, account, value string) string {
		return `SELECT ` + columns + ` FROM persons WHERE account_id = ` + account + ` AND ` + identifierColumns[k] + ` = ` + value
	})
	return strings.Join(parts, ` UNION ALL `), args
}

// holdersOrSurvivorsQuery is holdersQuery of holderColumns that also
// resolves aliases: for each identifier that is an alias (a merged
// person's, person_merge.go), the survivor it resolves to, read as holding
// it (the identifier's column is the value looked up), so that a match, a
// conflict and a breadcrumb's person all find the survivor. Each alias is
// looked up on its primary key; a value some person holds as its own is
// that person's, and the alias is not read (only the survivor itself can
// hold one of its aliases).
func holdersOrSurvivorsQuery(accountID string, ids domain.Identifiers) (string, []any) {
	var args sqlArgs
	account := args.add(accountID)
	parts := holderArms(&args, account, ids, func(k int, account, value string) string {
		return `SELECT ` + holderColumns + ` FROM persons WHERE account_id = ` + account + ` AND ` + identifierColumns[k] + ` = ` + value
	})
	parts = append(parts, holderArms(&args, account, ids, func(k int, account, value string) string {
		cols := make([]string, len(identifierColumns))
		for j, c := range identifierColumns {
			cols[j] = `p.` + c
		}
		cols[k] = `CAST(` + value + ` AS TEXT)`
		return `SELECT p.id, ` + strings.Join(cols, `, `) + ` FROM person_aliases a
			JOIN persons p ON p.account_id = a.account_id AND p.id = a.person_id
			WHERE a.account_id = ` + account + ` AND a.kind = '` + domain.AliasKinds[k] + `' AND a.value = ` + value + `
			AND NOT EXISTS (SELECT 1 FROM persons o WHERE o.account_id = ` + account + ` AND o.` + identifierColumns[k] + ` = ` + value + `)`
	})...)
	return strings.Join(parts, ` UNION ALL `), args
}

// holderArms is one SELECT per given identifier, in match order, as arm
// writes it for the identifier's kind (an index of identifierColumns) and
// its value's placeholder (the value normalized as the store holds it).
func holderArms(args *sqlArgs, account string, ids domain.Identifiers, arm func(k int, account, value string) string) []string {
	var parts []string
	for k, value := range [3]*string{ids.ExternalID, ids.Email, ids.FID} {
		if value == nil {
			continue
		}
		v := *value
		if identifierColumns[k] == "email_norm" {
			v = domain.NormEmail(v)
		}
		parts = append(parts, arm(k, account, args.add(v)))
	}
	return parts
}

// attributes are the person columns the API writes.
type attributes struct {
	domain.Identifiers
	firstName, lastName, phone *string
}

// attrUpdate is what a patch changes of a person's attributes: each column
// whose value differs from the stored one, with its new value; nil when
// none does.
type attrUpdate []columnValue

type columnValue struct {
	column string
	value  any
}

// changedAttributes lists the columns whose values differ between cur, as
// stored, and next. Only those are assigned: SQLite rewrites the entry of
// every index on a column an UPDATE assigns, even to the value it holds,
// so assigning all seven dirtied three more random index pages (email,
// external_id and f_id) per matched upsert. email_norm, which the unique
// index holds, is assigned only when it changes too: not for a change of
// case.
func changedAttributes(cur, next attributes) attrUpdate {
	var u attrUpdate
	assign := func(column string, from, to *string) {
		if !sameText(from, to) {
			u = append(u, columnValue{column, nullable(to)})
		}
	}
	if !sameText(cur.Email, next.Email) {
		norm := func(email *string) *string {
			if email == nil {
				return nil
			}
			n := domain.NormEmail(*email)
			return &n
		}
		assign("email", cur.Email, next.Email)
		assign("email_norm", norm(cur.Email), norm(next.Email))
	}
	assign("external_id", cur.ExternalID, next.ExternalID)
	assign("f_id", cur.FID, next.FID)
	assign("first_name", cur.firstName, next.firstName)
	assign("last_name", cur.lastName, next.lastName)
	assign("phone", cur.phone, next.phone)
	return u
}

// assignments is the SET list of u, its values added to args.
func (u attrUpdate) assignments(args *sqlArgs) string {
	var b strings.Builder
	for i, c := range u {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c.column + " = " + args.add(c.value))
	}
	return b.String()
}

func insertPerson(ctx context.Context, q querier, accountID, id string, a attributes, w store.Write) error {
	_, err := q.exec(ctx, `INSERT INTO persons (ord, `+newPersonColumns+`)
		VALUES (`+q.s.dialect.NewPersonOrd+`, $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`, newPersonRow(accountID, id, a, w)...)
	return err
}

// newPersonColumns are the columns a new person is written with, in the
// order of newPersonRow; insertPerson and createUnlessHeld share them.
const newPersonColumns = `id, account_id, email, email_norm, external_id, f_id,
	first_name, last_name, phone, upsert_result, created_at, last_seen_at`

// newPersonRow is a new person's row, stamped created now.
func newPersonRow(accountID, id string, a attributes, w store.Write) []any {
	var emailNorm any
	if a.Email != nil {
		emailNorm = domain.NormEmail(*a.Email)
	}
	now := w.Now.UnixMilli()
	return []any{id, accountID, nullable(a.Email), emailNorm, nullable(a.ExternalID), nullable(a.FID),
		nullable(a.firstName), nullable(a.lastName), nullable(a.phone), upsertResultArgs[domain.UpsertCreated], now, now}
}

// createdPerson is the person insertPerson and applyCustomValues just
// wrote: its attributes, no tags, the values set, stamped now.
func createdPerson(id string, a attributes, values []service.ValueChange, w store.Write) *domain.Person {
	now := domain.FromMillis(w.Now.UnixMilli())
	p := &domain.Person{ID: id, Email: a.Email, ExternalID: a.ExternalID, FID: a.FID,
		FirstName: a.firstName, LastName: a.lastName, Phone: a.phone,
		Companies: json.RawMessage(`[]`), UpsertResult: domain.UpsertCreated, DateCreated: now, DateLastSeen: now,
		TagIDs: []string{}, TagNames: []string{}, CustomFields: map[string]string{}}
	for _, v := range values {
		if !v.ClearAll && v.Value != nil {
			p.CustomFields[v.Key] = *v.Value
		}
	}
	return p
}

// applyPatch writes the supplied custom field values and works out the
// supplied attributes, and reports whether anything differed from what was
// stored. The attributes it leaves to recordChange (attrs, the columns that
// changed, nil when none did), which writes them in the same UPDATE as the
// stamps. Update Person comes here with external_id and f_id absent.
//
// matched says the write found the person by its identifiers (an upsert),
// one of which may be an alias of it (keepOwnIdentifiers); an Update
// Person names the person by id, and its email is applied as given.
func applyPatch(ctx context.Context, q querier, accountID, id string, in domain.PersonUpsert, values []service.ValueChange,
	matched bool) (attrs attrUpdate, didChange bool, err error) {
	// The row lock keeps a concurrent write of another attribute from being
	// overwritten with the value read here (SQLite's write transactions are
	// exclusive already); it is the person's lock of the lock order, taken
	// before its values are written.
	cur, err := scanPerson(q.queryRow(ctx, `SELECT `+personColumns+` FROM persons WHERE account_id = $1 AND id = $2`+q.s.dialect.LockPerson, accountID, id))
	if errors.Is(err, sql.ErrNoRows) {
		// The person matched was erased since: run again, to match or
		// create afresh.
		return nil, false, errPersonErased
	}
	if err != nil {
		return nil, false, err
	}
	if matched {
		if in, err = keepOwnIdentifiers(ctx, q, accountID, id, cur, in); err != nil {
			return nil, false, err
		}
	}
	attrs = patchAttributes(attributes{
		Identifiers: domain.Identifiers{ExternalID: cur.ExternalID, Email: cur.Email, FID: cur.FID},
		firstName:   cur.FirstName, lastName: cur.LastName, phone: cur.Phone,
	}, in)
	valuesChanged, err := applyCustomValues(ctx, q, accountID, id, values)
	return attrs, attrs != nil || valuesChanged, err
}

// keepOwnIdentifiers leaves out of a write matched to person id through an
// alias (an identifier of a person merged into it) the identifier it was
// matched by: the survivor keeps its own of that kind, and the write's
// other attributes apply. Only an identifier that differs from the
// person's own is looked up, so a write that names the person's own
// identifiers (nearly all) reads nothing more.
func keepOwnIdentifiers(ctx context.Context, q querier, accountID, id string, cur domain.Person, in domain.PersonUpsert) (domain.PersonUpsert, error) {
	own := [3]*string{cur.ExternalID, cur.Email, cur.FID}
	for k, o := range [3]*domain.Opt[string]{&in.ExternalID, &in.Email, &in.FID} {
		given := o.Ptr()
		if given == nil || own[k] != nil && sameIdentifier(k, *own[k], *given) {
			continue
		}
		v := *given
		if identifierColumns[k] == "email_norm" {
			v = domain.NormEmail(v)
		}
		owner, err := aliasOwner(ctx, q, accountID, domain.AliasKinds[k], v)
		if err != nil {
			return in, err
		}
		if owner == id {
			*o = domain.Opt[string]{}
		}
	}
	return in, nil
}

// sameIdentifier compares two values of the identifier of kind k as its
// unique index does (an email case-insensitively).
func sameIdentifier(k int, a, b string) bool {
	if identifierColumns[k] == "email_norm" {
		return domain.NormEmail(a) == domain.NormEmail(b)
	}
	return a == b
}

// patchAttributes is what in changes of the stored attributes: the
// supplied ones whose values differ (changedAttributes).
func patchAttributes(stored attributes, in domain.PersonUpsert) attrUpdate {
	next := stored
	set := func(dst **string, o domain.Opt[string]) {
		if o.Set {
			*dst = o.Ptr()
		}
	}
	set(&next.Email, in.Email)
	set(&next.firstName, in.FirstName)
	set(&next.lastName, in.LastName)
	set(&next.phone, in.Phone)
	set(&next.ExternalID, in.ExternalID)
	set(&next.FID, in.FID)
	return changedAttributes(stored, next)
}

func sameText(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// checkCustomValues loads the live Person fields of the account, only when
// the write names custom field keys, and has service.CustomValueChanges
// check the values against them.
func checkCustomValues(ctx context.Context, q querier, accountID string, in domain.Opt[map[string]json.RawMessage]) ([]service.ValueChange, error) {
	var live map[string]service.FieldDef
	if len(in.Value) > 0 {
		var err error
		if live, err = livePersonFields(ctx, q, accountID); err != nil {
			return nil, err
		}
	}
	return service.CustomValueChanges(in, live)
}

func livePersonFields(ctx context.Context, q querier, accountID string) (map[string]service.FieldDef, error) {
	rows, err := q.query(ctx, `SELECT id, key, data_type FROM custom_fields
		WHERE account_id = $1 AND collection = 'Person' AND archived_at IS NULL`, accountID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]service.FieldDef{}
	for rows.Next() {
		var key string
		var f service.FieldDef
		if err := rows.Scan(&f.ID, &key, &f.DataType); err != nil {
			return nil, err
		}
		out[key] = f
	}
	return out, rows.Err()
}

// applyCustomValues writes checked values and reports whether any stored
// value changed. Values of archived fields stay stored, untouched.
func applyCustomValues(ctx context.Context, q querier, accountID, personID string, values []service.ValueChange) (bool, error) {
	didChange := false
	for _, v := range values {
		var (
			res sql.Result
			err error
		)
		switch {
		case v.ClearAll:
			res, err = q.exec(ctx, `DELETE FROM person_field_values WHERE account_id = $1 AND person_id = $2
				AND field_id IN (SELECT id FROM custom_fields WHERE account_id = $3 AND collection = 'Person' AND archived_at IS NULL)`,
				accountID, personID, accountID)
		case v.Value == nil:
			res, err = q.exec(ctx, `DELETE FROM person_field_values WHERE account_id = $1 AND person_id = $2 AND field_id = $3`,
				accountID, personID, v.FieldID)
		default:
			// The WHERE makes rewriting an equal value touch no row, which is
			// how a no-op is told from a change.
			res, err = q.exec(ctx, `INSERT INTO person_field_values (account_id, person_id, field_id, value) VALUES ($1, $2, $3, $4)
				ON CONFLICT (person_id, field_id) DO UPDATE SET value = excluded.value
				WHERE person_field_values.value <> excluded.value`, accountID, personID, v.FieldID, *v.Value)
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
