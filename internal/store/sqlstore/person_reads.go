package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

const personColumns = `id, email, external_id, f_id, first_name, last_name, phone,
	language, pseudonym, occupation, age, ethnicity, income, edu, companies, address,
	email_opt_out, is_archived, upsert_result, created_at, last_seen_at`

func scanPerson(sc scanner) (domain.Person, error) {
	var (
		p                                                        domain.Person
		email, ext, fid, first, last, phone                      sql.NullString
		language, pseudonym, occupation, age, ethnicity, inc, ed sql.NullString
		companies, address                                       string
		created, seen                                            int64
	)
	if err := sc.Scan(&p.ID, &email, &ext, &fid, &first, &last, &phone,
		&language, &pseudonym, &occupation, &age, &ethnicity, &inc, &ed, &companies, &address,
		&p.EmailOptOut, &p.IsArchived, &p.UpsertResult, &created, &seen); err != nil {
		return p, err
	}
	p.Email, p.ExternalID, p.FID = strPtr(email), strPtr(ext), strPtr(fid)
	p.FirstName, p.LastName, p.Phone = strPtr(first), strPtr(last), strPtr(phone)
	p.Language, p.Pseudonym, p.Occupation, p.Age = strPtr(language), strPtr(pseudonym), strPtr(occupation), strPtr(age)
	p.Ethnicity, p.Income, p.Edu = strPtr(ethnicity), strPtr(inc), strPtr(ed)
	p.Companies = json.RawMessage(`[]`)
	if json.Valid([]byte(companies)) && len(companies) > 0 && companies[0] == '[' {
		p.Companies = json.RawMessage(companies)
	}
	// The profile columns are written outside the API; a malformed address
	// shows as unknown rather than failing every read of the person. Most
	// persons have none ('{}', the column's default), which decodes to the
	// zero Address without a decoder's price (a noticeable part of a Get
	// Person's CPU on PostgreSQL).
	if address != "{}" {
		_ = json.Unmarshal([]byte(address), &p.Address)
	}
	p.DateCreated, p.DateLastSeen = domain.FromMillis(created), domain.FromMillis(seen)
	return p, nil
}

// getPerson reads one person with its tags and custom field values, in
// one statement (readPerson).
func getPerson(ctx context.Context, q querier, accountID, id string) (*domain.Person, error) {
	p, err := readPerson(ctx, q, accountID, id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, domain.NotFound("person", id)
	}
	return p, err
}

// GetPerson returns one person of the account.
func (s *Store) GetPerson(ctx context.Context, accountID, id string) (_ *domain.Person, err error) {
	defer named("GetPerson", &err)
	var p *domain.Person
	at := s.readsAt(ctx)
	if c := s.persons; c != nil {
		p, err = c.get(ctx, personKey{accountID, id}, func(ctx context.Context) (*domain.Person, error) {
			return getPerson(ctx, s.reader(), accountID, id)
		})
	} else {
		p, err = s.gets.get(ctx, at, accountID, id)
	}
	if errors.Is(err, domain.ErrNotFound) {
		// Only a miss reads further: was the id merged into another?
		return nil, s.safeReadAt(ctx, at, func(db *sql.DB) error {
			return notFoundOrMerged(ctx, querier{s: s, db: db}, accountID, id)
		})
	}
	return p, err
}

// GetPersons reads the persons of ids in one read transaction, a chunk of
// them at a time with their details as a list page reads them
// (attachDetails): three statements a chunk, not one a person. The webhook
// worker renders a closing batch's persons this way. It bypasses the
// person cache, which a batch of persons read once would only churn.
func (s *Store) GetPersons(ctx context.Context, accountID string, ids []string) (_ map[string]*domain.Person, err error) {
	defer named("GetPersons", &err)
	out := make(map[string]*domain.Person, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	err = s.safeReadTx(ctx, func(q querier) error {
		clear(out)
		for chunk := range slices.Chunk(ids, finishChunk) {
			var args sqlArgs
			account, in := args.add(accountID), args.inList(chunk)
			ps, err := queryAll(ctx, q, scanPerson, `SELECT `+personColumns+` FROM persons
				WHERE account_id = `+account+` AND id IN (`+in+`)`, args...)
			if err != nil {
				return err
			}
			if err := attachDetails(ctx, q, accountID, ps); err != nil {
				return err
			}
			for i := range ps {
				out[ps[i].ID] = &ps[i]
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// attachDetails loads the live tags and the live Person custom field values
// of a whole page of persons in two queries, whatever its length.
func attachDetails(ctx context.Context, q querier, accountID string, ps []domain.Person) error {
	if len(ps) == 0 {
		return nil
	}
	ids := make([]string, len(ps))
	for i := range ps {
		ids[i] = ps[i].ID
	}
	var args sqlArgs
	account, in := args.add(accountID), args.inList(ids)
	// CROSS JOIN keeps SQLite driving from the page's ids through the
	// primary key instead of probing values per field of the account.
	return fillDetails(ctx, q, ps, args,
		`SELECT pt.person_id, t.id, t.name FROM person_tags pt
		JOIN tags t ON t.id = pt.tag_id AND t.account_id = pt.account_id AND t.archived_at IS NULL
		WHERE pt.account_id = `+account+` AND pt.person_id IN (`+in+`)
		ORDER BY pt.person_id, pt.created_at, t.id`,
		`SELECT v.person_id, f.key, v.value FROM person_field_values v
		CROSS JOIN custom_fields f
		WHERE f.id = v.field_id AND f.account_id = v.account_id AND f.collection = 'Person' AND f.archived_at IS NULL
			AND v.account_id = `+account+` AND v.person_id IN (`+in+`)`)
}

// fillDetails gives each of ps the tags and custom field values two queries
// read: tagsQuery's rows are (person_id, tag id, tag name) in the order the
// tags are shown, valuesQuery's (person_id, key, value). Rows of persons
// not in ps are ignored.
func fillDetails(ctx context.Context, q querier, ps []domain.Person, args []any, tagsQuery, valuesQuery string) error {
	at := make(map[string]*domain.Person, len(ps))
	for i := range ps {
		ps[i].TagIDs, ps[i].TagNames, ps[i].CustomFields = []string{}, []string{}, map[string]string{}
		at[ps[i].ID] = &ps[i]
	}
	rows, err := q.query(ctx, tagsQuery, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var pid, tid, name string
		if err := rows.Scan(&pid, &tid, &name); err != nil {
			return err
		}
		if p := at[pid]; p != nil {
			p.TagIDs, p.TagNames = append(p.TagIDs, tid), append(p.TagNames, name)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	rows.Close()

	rows, err = q.query(ctx, valuesQuery, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var pid, key, value string
		if err := rows.Scan(&pid, &key, &value); err != nil {
			return err
		}
		if p := at[pid]; p != nil {
			p.CustomFields[key] = value
		}
	}
	return rows.Err()
}

// inListSizes are the lengths an IN list is padded to, so that a query
// takes one of a few shapes (and prepared statements) whatever the count.
var inListSizes = []int{1, 5, 25, 100}

// inList adds the ids of an IN list and returns their placeholders, padded
// by repeating the first id (which changes no result).
func (a *sqlArgs) inList(ids []string) string {
	n := len(ids)
	if i := slices.IndexFunc(inListSizes, func(size int) bool { return size >= n }); i >= 0 {
		n = inListSizes[i]
	}
	padded := make([]any, n)
	for i := range padded {
		if i < len(ids) {
			padded[i] = ids[i]
		} else {
			padded[i] = ids[0]
		}
	}
	return a.list(padded...)
}

// ListPersons returns a page of the persons a selection names.
func (s *Store) ListPersons(ctx context.Context, accountID string, sel domain.PersonSelection, p domain.PageRequest) (out []domain.Person, total int, err error) {
	defer named("ListPersons", &err)
	if sel.Mode == domain.PersonByExternalID || sel.Mode == domain.PersonByEmail {
		return safePage(ctx, s, func(q querier) ([]domain.Person, int, error) {
			return lookupPersons(ctx, q, accountID, sel, p)
		})
	}
	err = s.safeReadTx(ctx, func(q querier) error {
		switch {
		case sel.Mode == domain.PersonWindow && sel.ExternalID == nil && len(sel.TagIDs) == 0:
			out, total, err = personWindow(ctx, q, accountID, sel.Since, sel.NewestFirst, p)
		case sel.Mode == domain.PersonWindow && sel.ExternalID == nil:
			out, total, err = personTagWindow(ctx, q, accountID, sel.Since, sel.TagIDs, sel.NewestFirst, p)
		default:
			where, args, ferr := personFilter(accountID, sel)
			if ferr != nil {
				return ferr
			}
			out, total, err = listPage(ctx, q, personColumns, `persons WHERE `+where, seenOrderBy(`last_seen_at, id`, sel.NewestFirst),
				args, p, scanPerson)
		}
		if err != nil {
			return err
		}
		return attachDetails(ctx, q, accountID, out)
	})
	return out, total, err
}

// personWindow reads a page of the persons last seen at or after since,
// counted and located through the account's persons timeline.
func personWindow(ctx context.Context, q querier, accountID string, since time.Time, newest bool, p domain.PageRequest) ([]domain.Person, int, error) {
	r := timelineRange{tl: personsTimeline(accountID), lo: ceilMillis(since), hi: timelineMax}
	return timelinePage(ctx, q, r, newest, p, func(pos position, limit int) ([]domain.Person, error) {
		// Newest first, the page starts below the bound the timeline
		// located (as a breadcrumbs page does) and walks the same index
		// backwards.
		query := `SELECT id FROM ` + seenOrder(q) + ` WHERE account_id = $1 AND last_seen_at >= $2
			ORDER BY last_seen_at, id LIMIT $3 OFFSET $4`
		args := []any{accountID, pos.bound, limit, pos.skip}
		if newest {
			query = `SELECT id FROM ` + seenOrder(q) + ` WHERE account_id = $1 AND last_seen_at >= $2 AND last_seen_at < $3
			ORDER BY last_seen_at DESC, id DESC LIMIT $4 OFFSET $5`
			args = []any{accountID, r.lo, pos.bound, limit, pos.skip}
		}
		ids, err := queryAll(ctx, q, scanID, query, args...)
		if err != nil {
			return nil, err
		}
		return personsByID(ctx, q, accountID, ids)
	})
}

// seenOrderBy is a window's ORDER BY list, turned round when newest first.
func seenOrderBy(orderBy string, newest bool) string {
	if newest {
		return reversedOrder(orderBy)
	}
	return orderBy
}

// seenOrder is the table that orders persons by last seen (Dialect.SeenOrder).
func seenOrder(q querier) string {
	if t := q.s.dialect.SeenOrder; t != "" {
		return t
	}
	return `persons`
}

// personsByID reads the persons of a page in the order of their ids. The
// page's order comes from the index that chose the ids; reading the rows
// apart keeps that read to the index alone, however many rows it skips.
func personsByID(ctx context.Context, q querier, accountID string, ids []string) ([]domain.Person, error) {
	if len(ids) == 0 {
		return []domain.Person{}, nil
	}
	var args sqlArgs
	account := args.add(accountID)
	rows, err := queryAll(ctx, q, scanPerson, `SELECT `+personColumns+` FROM persons WHERE account_id = `+account+
		` AND id IN (`+args.inList(ids)+`)`, args...)
	if err != nil {
		return nil, err
	}
	at := make(map[string]int, len(ids))
	for i, id := range ids {
		at[id] = i
	}
	out := make([]domain.Person, len(ids))
	for _, p := range rows {
		out[at[p.ID]] = p
	}
	if len(rows) != len(ids) {
		return nil, fmt.Errorf("persons of a page: %d of %d ids found in one snapshot", len(rows), len(ids))
	}
	return out, nil
}

func scanID(sc scanner) (string, error) {
	var id string
	err := sc.Scan(&id)
	return id, err
}

// personFilter builds the WHERE clause of a window narrowed by an
// external_id (lookups go to lookupPersons, plain windows and tag windows
// to their timelines).
func personFilter(accountID string, sel domain.PersonSelection) (string, sqlArgs, error) {
	var args sqlArgs
	account := args.add(accountID)
	where := `account_id = ` + account
	if sel.Mode != domain.PersonWindow {
		return "", nil, fmt.Errorf("sqlstore: list persons without a mode (%d); service.SelectPersons makes selections", sel.Mode)
	}
	where += ` AND last_seen_at >= ` + args.add(ceilMillis(sel.Since))
	if sel.ExternalID != nil {
		where += ` AND external_id = ` + args.add(*sel.ExternalID)
	}
	// With an external_id the window holds at most one person: each tag is
	// one probe. An archived or unknown tag is held by nobody.
	for _, tag := range dedupe(sel.TagIDs) {
		where += ` AND EXISTS (SELECT 1 FROM person_tags pt JOIN tags t ON t.id = pt.tag_id AND t.account_id = pt.account_id
			AND t.archived_at IS NULL WHERE pt.person_id = persons.id AND pt.tag_id = ` + args.add(tag) + `)`
	}
	return where, args, nil
}

func dedupe(ids []string) []string {
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// ListPersonFields returns the live Person custom fields of the account.
func (s *Store) ListPersonFields(ctx context.Context, accountID string) (_ []domain.CustomField, err error) {
	defer named("ListPersonFields", &err)
	rows, err := s.reader().query(ctx, `SELECT `+fieldColumns+` FROM custom_fields
		WHERE account_id = $1 AND collection = 'Person' AND archived_at IS NULL ORDER BY created_at, id`, accountID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []domain.CustomField{}
	for rows.Next() {
		f, err := scanField(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// ceilMillis is the first stored millisecond at or after t, so that an
// inclusive lower bound with sub-millisecond digits keeps its meaning.
func ceilMillis(t time.Time) int64 {
	ms := t.UnixMilli()
	if t.After(domain.FromMillis(ms)) {
		ms++
	}
	return ms
}
