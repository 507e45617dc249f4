package sqlstore

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/store"
)

// An import reads its lines in chunks. For each chunk one query asks which
// of the chunk's identifiers persons hold already. A line none of whose
// identifiers is held, by a stored person or by a line before it in the
// chunk, can only create a person: it is checked at once and its rows are
// written with the chunk's other new persons in multi-row INSERTs. Every
// other line (a match, a conflict) first writes what is pending and then
// runs the in-transaction part of UpsertPerson itself. Both ways give what
// UpsertPerson followed by AddPersonTags would; the first costs a few
// statements per chunk instead of several per line.
const (
	// importChunk is how many lines share one identifier lookup.
	importChunk = 512
	// lookupValues is the most values one lookup lists.
	lookupValues = 512
	// firstAnalyze is the number of persons after which an import first
	// refreshes the planner's statistics (see analyzePersons).
	firstAnalyze = 1000
)

// ImportPersons applies a stream of upserts in one transaction (pds import
// persons), or chunk by chunk where the engine asks (Dialect.Import),
// then brings the statistics of the tables it wrote up to date.
func (s *Store) ImportPersons(ctx context.Context, accountID string, lines iter.Seq2[store.PersonImport, error], w store.Write) (_ store.PersonImportResult, err error) {
	defer named("ImportPersons", &err)
	s.folder.pause()
	defer s.folder.resume()
	im := &personImporter{s: s, ctx: ctx, accountID: accountID, w: w, liveTag: map[string]bool{},
		nextAnalyze: firstAnalyze, ids: newPersonIDs(w.Now), ownIDs: map[string]bool{}, takenIDs: map[string]bool{}}
	lines = normalizedLines(lines)
	if failed, err := s.dialect.Import(ctx, s, im, lines); err != nil {
		return failed, err
	}
	// The import is committed; its counts are exact whether folded now or
	// by the background folder later, so a failure here is not the import's.
	_ = s.FoldTimelines(ctx)
	res := store.PersonImportResult{PersonImportCounts: im.counts}
	// After the fold, so that the counts' statistics describe its buckets.
	res.Analyze, res.AnalyzeErr = s.analyzeTables(ctx, s.dialect.personImportTablesOf())
	return res, nil
}

// ImportInChunks has pds import persons commit each chunk of lines on its
// own (Dialect.Import): an engine with one writer (SQLite) would otherwise
// keep every other write of the database waiting for the whole import. A
// failed import answers what it committed.
func ImportInChunks(ctx context.Context, s *Store, im *personImporter, lines iter.Seq2[store.PersonImport, error]) (store.PersonImportResult, error) {
	through, err := s.importInChunks(ctx, im, lines)
	if err != nil {
		return store.PersonImportResult{PersonImportCounts: im.counts, ImportedThrough: through}, err
	}
	return store.PersonImportResult{}, nil
}

// ImportAtOnce imports a file in one transaction, all or nothing
// (Dialect.Import), while the other writes go on: for an engine whose
// writers run in parallel (PostgreSQL).
func ImportAtOnce(ctx context.Context, s *Store, im *personImporter, lines iter.Seq2[store.PersonImport, error]) (store.PersonImportResult, error) {
	return store.PersonImportResult{}, s.importAtOnce(ctx, im, lines)
}

// normalizedLines is lines with each line's identifiers in their normal
// form (domain.PersonUpsert.Normalize), or a line that cannot be one
// refused by its number.
func normalizedLines(lines iter.Seq2[store.PersonImport, error]) iter.Seq2[store.PersonImport, error] {
	return func(yield func(store.PersonImport, error) bool) {
		for rec, err := range lines {
			if err == nil {
				if nerr := rec.Person.Normalize(); nerr != nil {
					err = &store.ImportLineError{Line: rec.Line, Err: nerr}
				}
			}
			if !yield(rec, err) {
				return
			}
		}
	}
}

// importAtOnce writes every line in one transaction: all or nothing.
func (s *Store) importAtOnce(ctx context.Context, im *personImporter, lines iter.Seq2[store.PersonImport, error]) error {
	// lines can be read only once, so the import must never run again
	// after a failure of another caller that shared its transaction.
	return s.inTxOnce(ctx, func(q querier) error {
		// Two imports into one account wait for each other rather than
		// race for the same identifiers.
		if err := s.lockAccount(ctx, q, im.accountID, "persons"); err != nil {
			return err
		}
		im.q = q
		for rec, err := range lines {
			if err != nil {
				return err
			}
			if im.buf = append(im.buf, rec); len(im.buf) == importChunk {
				if err := im.chunk(); err != nil {
					return err
				}
			}
		}
		return im.chunk()
	})
}

// importYield is how long an import that commits chunk by chunk leaves the
// write lock free after each chunk, for the writes waiting for it (which
// poll for it every beginPoll, see committer.begin). A million lines are
// some two thousand chunks: two seconds, a small part of such an import.
const importYield = time.Millisecond

// importInChunks writes the lines a chunk at a time, each chunk in a
// transaction of its own, leaving the write lock free between them. Should
// a chunk fail, the chunks before it stay imported: it returns the last
// line they hold (0 for none), and im.counts counts them alone.
func (s *Store) importInChunks(ctx context.Context, im *personImporter, lines iter.Seq2[store.PersonImport, error]) (int, error) {
	next, stop := iter.Pull2(lines)
	defer stop()
	through := 0
	for {
		var chunk []store.PersonImport
		for len(chunk) < importChunk {
			rec, err, ok := next()
			if !ok {
				break
			}
			if err != nil {
				return through, err
			}
			chunk = append(chunk, rec)
		}
		if len(chunk) == 0 {
			return through, nil
		}
		before := im.counts
		err := s.inTxOnce(ctx, func(q querier) error {
			if err := s.lockAccount(ctx, q, im.accountID, "persons"); err != nil {
				return err
			}
			im.q, im.buf, im.foldsHeld = q, append(im.buf[:0], chunk...), false
			return im.chunk()
		})
		if err != nil {
			im.counts, im.pending, im.buf = before, im.pending[:0], im.buf[:0]
			return through, err
		}
		through = chunk[len(chunk)-1].Line
		time.Sleep(importYield)
	}
}

// personImporter carries what one import learns as it goes.
type personImporter struct {
	s         *Store
	ctx       context.Context
	q         querier
	accountID string
	w         store.Write
	// liveTag caches, per tag id named so far, whether it is a live tag of
	// the account.
	liveTag map[string]bool
	counts  store.PersonImportCounts

	// buf holds the lines of the chunk being read.
	buf []store.PersonImport
	// taken holds, by kind (external_id, email_norm, f_id), the identifiers
	// of the chunk that a stored person held when the chunk began or that a
	// line of the chunk wrote.
	taken [3]map[string]bool
	// pending are the persons created by the chunk and not written yet.
	pending []newPerson
	// ids names the persons the chunks create.
	ids *personIDs
	// written counts the persons created so far; nextAnalyze is the count
	// at which statistics are refreshed next.
	written, nextAnalyze int
	// foldsHeld says the import holds Dialect.SerialFold.
	foldsHeld bool
	// changed lists the persons the chunk created or changed, in the
	// order of its lines, for the change feed (reorderChanges).
	changed []string
	// ownIDs are the ids of the chunk's lines that persons of the account
	// hold (those lines restore them); takenIDs those any person of the
	// database holds or a line before took (person_restore.go).
	ownIDs, takenIDs map[string]bool
}

// newPerson is a person a line creates, waiting to be written.
type newPerson struct {
	line   int
	id     string
	attrs  attributes
	values []service.ValueChange
	tags   []string
	// createdAt and lastSeenAt are unix milliseconds: the line's dates,
	// or the import's time.
	createdAt, lastSeenAt int64
}

// identifier kinds, in the order of personImporter.taken.
const (
	kindExternalID = iota
	kindEmail
	kindFID
)

// keys returns the identifiers of ids by kind ("" where absent), emails
// normalised as stored.
func keys(ids domain.Identifiers) [3]string {
	var k [3]string
	if ids.ExternalID != nil {
		k[kindExternalID] = *ids.ExternalID
	}
	if ids.Email != nil {
		k[kindEmail] = domain.NormEmail(*ids.Email)
	}
	if ids.FID != nil {
		k[kindFID] = *ids.FID
	}
	return k
}

// chunk applies the buffered lines and writes what they created.
func (im *personImporter) chunk() error {
	if len(im.buf) == 0 {
		return nil
	}
	if im.w.Later != nil {
		if now := im.w.Later(); now.After(im.w.Now) {
			im.w.Now = now
		}
	}
	// The suppressions after the holders: read in that order in the
	// chunk's transaction, an erasure that committed in between is seen by
	// the second read if the first missed its person.
	if err := im.lookupTaken(); err != nil {
		return err
	}
	if err := im.refuseSuppressed(); err != nil {
		return err
	}
	if err := im.lookupIDs(); err != nil {
		return err
	}
	if err := im.lockHeld(); err != nil {
		return err
	}
	for _, rec := range im.buf {
		if err := im.line(rec); err != nil {
			return err
		}
	}
	im.buf = im.buf[:0]
	if err := im.flush(); err != nil {
		return err
	}
	if err := reorderChanges(im.ctx, im.q, im.accountID, im.changed); err != nil {
		return err
	}
	im.changed = im.changed[:0]
	if im.written >= im.nextAnalyze {
		im.nextAnalyze = 2 * im.written
		return im.s.analyzePersons(im.ctx, im.q)
	}
	return nil
}

// refuseSuppressed ends the import at the first line of the chunk that
// names a suppressed identifier: one look-up per chunk.
func (im *personImporter) refuseSuppressed() error {
	values := make([][]domain.SuppressedValue, len(im.buf))
	for i, rec := range im.buf {
		values[i] = upsertValues(rec.Person)
	}
	refused, err := im.s.suppressedAt(im.ctx, im.q, im.accountID, values)
	if err != nil {
		return err
	}
	for i, rec := range im.buf {
		if refused[i] != nil {
			return &store.ImportLineError{Line: rec.Line, Err: refused[i]}
		}
	}
	return nil
}

// line applies one line, or refuses it with an *store.ImportLineError.
func (im *personImporter) line(rec store.PersonImport) error {
	fail := func(err error) error { return &store.ImportLineError{Line: rec.Line, Err: err} }
	tags := dedupe(rec.TagIDs)
	if err := im.checkTags(tags); err != nil {
		return fail(err)
	}
	in := rec.Person
	ids := domain.Identifiers{ExternalID: in.ExternalID.Ptr(), Email: in.Email.Ptr(), FID: in.FID.Ptr()}
	k := keys(ids)
	held := false
	for kind, v := range k {
		if v != "" && im.taken[kind][v] {
			held = true
		}
		if v != "" {
			im.taken[kind][v] = true
		}
	}
	if rec.ID != "" && im.ownIDs[rec.ID] {
		return im.restore(rec, tags)
	}
	if !held {
		// Nobody holds these identifiers: UpsertPerson would create.
		values, err := checkCustomValues(im.ctx, im.q, im.accountID, in.CustomFields)
		if err != nil {
			return fail(err)
		}
		id := im.newID(rec.ID)
		createdAt, lastSeenAt := im.datesOf(rec)
		im.pending = append(im.pending, newPerson{line: rec.Line, id: id, values: values, tags: tags,
			createdAt: createdAt, lastSeenAt: lastSeenAt,
			attrs: attributes{Identifiers: ids, firstName: in.FirstName.Ptr(), lastName: in.LastName.Ptr(), phone: in.Phone.Ptr()}})
		im.changed = append(im.changed, id)
		im.counts.Created++
		return nil
	}
	// A match or a conflict: decided on the database, which must hold the
	// persons created by the lines before this one.
	if err := im.flush(); err != nil {
		return err
	}
	id, c, attrs, _, err := applyUpsert(im.ctx, im.q, im.accountID, in, im.w, nil)
	if err != nil {
		return fail(err)
	}
	added, err := im.attachTags(id, tags)
	if err != nil {
		return fail(err)
	}
	if added && c == upsertNoChange {
		c = changed
	}
	if _, err := recordChange(im.ctx, im.q, recorded{accountID: im.accountID, personID: id, c: c, attrs: attrs, w: im.w}, false); err != nil {
		return fail(err)
	}
	switch c {
	case createdNew:
		im.counts.Created++
		im.written++
		im.changed = append(im.changed, id)
	case changed:
		im.counts.Updated++
		im.changed = append(im.changed, id)
	default:
		im.counts.Unchanged++
	}
	return nil
}

// lookupTaken starts a chunk: taken becomes the identifiers of the chunk's
// lines that stored persons hold, each kind asked on its unique index.
func (im *personImporter) lookupTaken() error {
	var lists [3][]string
	for kind := range im.taken {
		im.taken[kind] = map[string]bool{}
	}
	for _, rec := range im.buf {
		k := keys(domain.Identifiers{ExternalID: rec.Person.ExternalID.Ptr(), Email: rec.Person.Email.Ptr(), FID: rec.Person.FID.Ptr()})
		for kind, v := range k {
			// taken doubles as the set of values listed so far.
			if v != "" && !im.taken[kind][v] {
				im.taken[kind][v] = true
				lists[kind] = append(lists[kind], v)
			}
		}
	}
	for kind := range im.taken {
		clear(im.taken[kind])
	}
	for kind, column := range [3]string{"external_id", "email_norm", "f_id"} {
		for vs := lists[kind]; len(vs) > 0; {
			batch := vs[:min(len(vs), lookupValues)]
			vs = vs[len(batch):]
			if err := im.lookup(kind, column, batch); err != nil {
				return err
			}
		}
	}
	return nil
}

// lockHeld locks, in id order, the stored persons the chunk's lines match
// (those holding an identifier lookupTaken found taken), before the lines
// write any of them: the lock order (lock_order.go) within a chunk. The
// persons the import itself created are its own until it commits.
func (im *personImporter) lockHeld() error {
	var held []domain.Identifiers
	for _, rec := range im.buf {
		ids := domain.Identifiers{ExternalID: rec.Person.ExternalID.Ptr(), Email: rec.Person.Email.Ptr(), FID: rec.Person.FID.Ptr()}
		for kind, v := range keys(ids) {
			if v != "" && im.taken[kind][v] {
				held = append(held, ids)
				break
			}
		}
	}
	if len(held) == 0 {
		return nil
	}
	return lockHolders(im.ctx, im.q, im.accountID, held)
}

// lookup marks taken the values of column that persons of the account hold.
func (im *personImporter) lookup(kind int, column string, values []string) error {
	query, args := takenQuery(im.accountID, column, values)
	rows, err := im.q.query(im.ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return err
		}
		im.taken[kind][v] = true
	}
	return rows.Err()
}

// takenQuery asks which of the values persons of the account hold in
// column: an IN list on the column's unique index, padded to a power of two
// (repeating its first value) so that chunks share a few statement shapes.
// (One statement per kind: SQLite finds the name of each parameter by a
// walk of the list of names, so binding costs the square of their number.)
func takenQuery(accountID, column string, values []string) (string, []any) {
	n := 8
	for n < len(values) {
		n *= 2
	}
	args := make([]any, 1, n+1)
	args[0] = accountID
	marks := make([]string, n)
	for i := range n {
		args = append(args, values[min(i, len(values)-1)])
		marks[i] = "$" + strconv.Itoa(i+2)
	}
	return `SELECT ` + column + ` FROM persons WHERE account_id = $1 AND ` + column + ` IN (` + strings.Join(marks, ", ") + `)`, args
}

// flush writes the pending new persons: what insertPerson, applyCustomValues,
// attachTags and recordChange would write for each, table by table.
func (im *personImporter) flush() error {
	if len(im.pending) == 0 {
		return nil
	}
	ps := im.pending
	im.pending = im.pending[:0]
	now := im.w.Now.UnixMilli()
	seen := map[int64]int{} // new persons by last-seen time, for the timeline
	due := im.w.Now.Add(im.w.Window).UnixMilli()
	var (
		persons, values, tags, bursts [][]any
		links                         []bitDelta // the tag bits the links set
	)
	ords, err := im.ords(len(ps))
	if err != nil {
		return err
	}
	for i, p := range ps {
		a := p.attrs
		var emailNorm any
		if a.Email != nil {
			emailNorm = domain.NormEmail(*a.Email)
		}
		persons = append(persons, []any{ords[i], p.id, nullable(a.Email), emailNorm, nullable(a.ExternalID), nullable(a.FID),
			nullable(a.firstName), nullable(a.lastName), nullable(a.phone), p.createdAt, p.lastSeenAt})
		seen[p.lastSeenAt]++
		// A new person holds no value yet: only values set are written
		// (removing one, or all, removes nothing).
		for _, v := range p.values {
			if !v.ClearAll && v.Value != nil {
				values = append(values, []any{p.id, v.FieldID, *v.Value})
			}
		}
		for _, t := range p.tags {
			tags = append(tags, []any{p.id, t, p.lastSeenAt})
			links = append(links, bitDelta{im.accountID, t, ords[i], 1})
		}
		bursts = append(bursts, []any{p.id})
	}
	if _, err := im.q.exec(im.ctx, im.s.dialect.ImportMarkOn); err != nil {
		return err
	}
	// In each row, $1... are the values every row shares, ? the row's own.
	for _, t := range []struct {
		into, row string
		shared    []any
		rows      [][]any
	}{
		{`persons (ord, id, account_id, email, email_norm, external_id, f_id, first_name, last_name, phone, upsert_result, created_at, last_seen_at)`,
			`?, ?, $1, ?, ?, ?, ?, ?, ?, ?, $2, ?, ?`, []any{im.accountID, domain.UpsertCreated}, persons},
		{`person_field_values (account_id, person_id, field_id, value)`, `$1, ?, ?, ?`, []any{im.accountID}, values},
		// The person is new, so it has no burst yet: this opens its first.
		{`bursts (person_id, account_id, event, opened_at, last_change_at, due_at)`, `?, $1, $2, $3, $3, $4`,
			[]any{im.accountID, domain.EventPersonCreated, now, due}, bursts},
	} {
		if err := im.insert(t.into, t.row, t.shared, t.rows); err != nil {
			return fmt.Errorf("writing the persons of lines %d to %d: %w", ps[0].line, ps[len(ps)-1].line, err)
		}
	}
	if err := im.insert(`person_tags (account_id, person_id, tag_id, created_at, last_seen_at)`, `$1, ?, ?, $2, ?`,
		[]any{im.accountID, now}, tags); err != nil {
		return fmt.Errorf("writing the tags of lines %d to %d: %w", ps[0].line, ps[len(ps)-1].line, err)
	}
	if err := im.writeDerived(seen, links); err != nil {
		return fmt.Errorf("counting the persons of lines %d to %d: %w", ps[0].line, ps[len(ps)-1].line, err)
	}
	im.written += len(ps)
	return nil
}

// writeDerived ends the marker flush began (Dialect.ImportMarkOn) and
// writes what the triggers it silenced would have: the new persons in the
// persons timeline, one delta per last-seen time (one for a chunk of new
// persons, which share the import's time), and the tag bits of the links, by
// the ords the import gave. Per person and per link, those triggers and
// the folds of their deltas each made a large import noticeably slower,
// and on PostgreSQL a fold running meanwhile on another instance
// stepped over each uncommitted delta every second. The marker lives only
// between statements of this transaction, which no other write shares
// (inTxOnce), so no other write ever sees it, and a failure in between
// rolls it back with the rest.
func (im *personImporter) writeDerived(seen map[int64]int, links []bitDelta) error {
	if _, err := im.q.exec(im.ctx, im.s.dialect.ImportMarkOff); err != nil {
		return err
	}
	deltas := make([][]any, 0, len(seen))
	for at, n := range seen {
		deltas = append(deltas, []any{at, n})
	}
	if err := im.insert(`timeline_deltas (account_id, series, key, at_ms, n)`, `$1, 'persons', '', ?, ?`,
		[]any{im.accountID}, deltas); err != nil {
		return err
	}
	if len(links) == 0 {
		return nil
	}
	// Folds write tag_bits too; from here until the import commits they
	// wait for it (Dialect.SerialFold).
	if !im.foldsHeld && im.s.dialect.SerialFold != "" {
		if _, err := im.q.exec(im.ctx, im.s.dialect.SerialFold); err != nil {
			return err
		}
		im.foldsHeld = true
	}
	// The persons are new, so no delta of theirs waits to be folded: the
	// bits are set here, before any later change to these links.
	return applyChunkChanges(im.ctx, im.q, chunkChanges(links))
}

// ords takes n new numbers for the persons flush writes.
func (im *personImporter) ords(n int) ([]int64, error) {
	ords, err := queryAll(im.ctx, im.q, func(sc scanner) (int64, error) {
		var o int64
		err := sc.Scan(&o)
		return o, err
	}, im.s.dialect.ImportOrds, n)
	if err == nil && len(ords) != n {
		err = fmt.Errorf("import: %d person numbers for %d persons", len(ords), n)
	}
	return ords, err
}

// insert writes rows in multi-row INSERTs into into (a table and its
// columns). row is the template of one row's values: $k stands for shared[k-1],
// the same in every row, and each ? for the row's next own value; the
// statement numbers them all. A statement carries up to the engine's
// insertParams of its rows, the rest go in statements of halving sizes, so
// that few statement shapes exist.
func (im *personImporter) insert(into, row string, shared []any, rows [][]any) error {
	if len(rows) == 0 {
		return nil
	}
	perRow := strings.Count(row, "?")
	limit := im.s.dialect.InsertParams
	most := 1
	for most*2*perRow <= limit {
		most *= 2
	}
	for len(rows) > 0 {
		n := most
		for n > len(rows) {
			n /= 2
		}
		batch := rows[:n]
		rows = rows[n:]
		args := append(make([]any, 0, len(shared)+n*perRow), shared...)
		var b strings.Builder
		b.WriteString(`INSERT INTO ` + into + ` VALUES `)
		for i, r := range batch {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteByte('(')
			own := 0
			for j := 0; j < len(row); j++ {
				if row[j] != '?' {
					b.WriteByte(row[j])
					continue
				}
				args = append(args, r[own])
				own++
				b.WriteString("$" + strconv.Itoa(len(args)))
			}
			b.WriteByte(')')
		}
		if _, err := im.q.exec(im.ctx, b.String(), args...); err != nil {
			return err
		}
	}
	return nil
}

// checkTags refuses a tag id that is not a live tag of the account, asking
// the database once per distinct id of the import.
func (im *personImporter) checkTags(tags []string) error {
	var unknown []string
	for _, t := range tags {
		if _, ok := im.liveTag[t]; !ok {
			unknown = append(unknown, t)
		}
	}
	for len(unknown) > 0 {
		batch := unknown[:min(len(unknown), 100)]
		unknown = unknown[len(batch):]
		live, err := liveTags(im.ctx, im.q, im.accountID, batch)
		if err != nil {
			return err
		}
		for _, t := range batch {
			im.liveTag[t] = live[t]
		}
	}
	for _, t := range tags {
		if !im.liveTag[t] {
			return domain.NotFound("tag", t)
		}
	}
	return nil
}

// attachTags links checked live tags to a stored person and reports whether
// it held any of them not yet, as AddPersonTags does.
func (im *personImporter) attachTags(personID string, tags []string) (bool, error) {
	added := false
	for _, t := range tags {
		res, err := im.q.exec(im.ctx, `INSERT INTO person_tags (account_id, person_id, tag_id, created_at, last_seen_at)
			SELECT $1, $2, $3, $4, p.last_seen_at FROM persons p WHERE p.account_id = $1 AND p.id = $2
			ON CONFLICT (person_id, tag_id) DO NOTHING`, im.accountID, personID, t, im.w.Now.UnixMilli())
		if err != nil {
			return false, err
		}
		if n, _ := res.RowsAffected(); n > 0 {
			added = true
		}
	}
	return added, nil
}

// analyzePersons refreshes PostgreSQL's statistics of persons inside the
// import's transaction, where ANALYZE counts the rows the transaction has
// inserted; an import runs it each time the persons it created doubled.
// Statements are planned with the statistics of when they were first run: a
// table that was empty then has none, every index led by account_id looks as
// good as another, and PostgreSQL picked persons_last_seen (an index it has
// no more: migration 00200) for the identifier lookups, so each read every
// person imported so far, and the import's time grew with the square of
// its size. Fresh statistics invalidate those plans, and as the table grows
// the unique indexes win by more. SQLite's planner needs no statistics for
// these lookups (TestIdentifierLookupPlan).
func (s *Store) analyzePersons(ctx context.Context, q querier) error {
	if s.dialect.AnalyzePersons == "" {
		return nil
	}
	_, err := q.tx.ExecContext(ctx, s.dialect.AnalyzePersons)
	return err
}

// personIDs names the persons an import creates in order of creation. Each
// is "per_" and 24 hex digits like any person id, made of 4 bytes of the
// import's start (unix seconds), 4 random bytes drawn once per import and a
// 4-byte count. Random ids would put each new person at a random place in
// every index led by the id (the primary key, the tags, the outbox, the
// last-seen order within the import's time): with sequential ids those
// inserts append, touching a few pages instead of one page per person.
// Two imports share a prefix only if they start in the same second with
// the same 32 random bits; even then a clash is a primary key violation
// that fails the import, never a merge of two persons.
type personIDs struct {
	prefix [8]byte
	n      uint32
}

func newPersonIDs(now time.Time) *personIDs {
	var p personIDs
	binary.BigEndian.PutUint32(p.prefix[:4], uint32(now.Unix()))
	_, _ = rand.Read(p.prefix[4:])
	return &p
}

func (p *personIDs) next() string {
	var b [12]byte
	copy(b[:], p.prefix[:])
	p.n++
	binary.BigEndian.PutUint32(b[8:], p.n)
	return domain.PersonIDPrefix + "_" + hex.EncodeToString(b[:])
}
