package sqlstore

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/store"
)

// An import of the lines of GET /persons/export restores: a line whose id
// a person of the account has puts that person back as the line shows it,
// so that exporting and importing again gives the export back. A line
// whose id no person of the account has is an upsert like any line; the
// person it creates keeps the line's id unless another account's person
// has it (ids are unique in a database), and the line's dates.

// lookupIDs starts a chunk: which of its lines' ids persons of the
// database hold, and which of those the account's.
func (im *personImporter) lookupIDs() error {
	clear(im.ownIDs)
	var ids []string
	for _, rec := range im.buf {
		if rec.ID != "" && !slices.Contains(ids, rec.ID) {
			ids = append(ids, rec.ID)
		}
	}
	for len(ids) > 0 {
		batch := ids[:min(len(ids), 100)]
		ids = ids[len(batch):]
		var args sqlArgs
		in := args.inList(batch)
		rows, err := im.q.query(im.ctx, `SELECT id, account_id FROM persons WHERE id IN (`+in+`)`, args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id, account string
			if err := rows.Scan(&id, &account); err != nil {
				rows.Close()
				return err
			}
			im.takenIDs[id] = true
			if account == im.accountID {
				im.ownIDs[id] = true
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	return nil
}

// newID names a person a line creates: the line's id when it is a person
// id no person has, else a new one.
func (im *personImporter) newID(lineID string) string {
	if lineID != "" && strings.HasPrefix(lineID, domain.PersonIDPrefix+"_") && !im.takenIDs[lineID] {
		im.takenIDs[lineID] = true
		return lineID
	}
	return im.ids.next()
}

// datesOf is the creation and last-seen times a line gives a person it
// creates (unix milliseconds): its own, or the import's time.
func (im *personImporter) datesOf(rec store.PersonImport) (created, lastSeen int64) {
	created, lastSeen = im.w.Now.UnixMilli(), im.w.Now.UnixMilli()
	if rec.DateCreated != nil {
		created = rec.DateCreated.UnixMilli()
	}
	if rec.DateLastSeen != nil {
		lastSeen = rec.DateLastSeen.UnixMilli()
	}
	return created, lastSeen
}

// restore puts the account's person rec.ID back as the line shows it: its
// identifiers (an identifier another person holds is a conflict, as for
// any write), names and phone, exactly its live custom values and live
// tags (when the line lists them), and its dates. A person already as the
// line shows it is unchanged and written nothing; one that changed fires
// its event as any change does.
func (im *personImporter) restore(rec store.PersonImport, tags []string) error {
	fail := func(err error) error { return &store.ImportLineError{Line: rec.Line, Err: err} }
	if err := im.flush(); err != nil {
		return err
	}
	ctx, q, id := im.ctx, im.q, rec.ID
	if err := lockPerson(ctx, q, im.accountID, id); err != nil {
		return fail(err)
	}
	cur, err := personsByID(ctx, q, im.accountID, []string{id})
	if err == nil {
		err = attachDetails(ctx, q, im.accountID, cur)
	}
	if err != nil {
		return err
	}
	held := cur[0]
	in := rec.Person
	ids := in.Identifiers()
	holders, err := holdersAndSuppressed(ctx, q, im.accountID, ids, upsertValues(in))
	if err != nil {
		return err
	}
	if err := service.CheckIdentifiersFree(id, ids, holders); err != nil {
		return fail(err)
	}
	if in.CustomFields.Set && !in.CustomFields.Null {
		// The line's values are all the person holds: each other is removed.
		exact := maps.Clone(in.CustomFields.Value)
		if exact == nil {
			exact = map[string]json.RawMessage{}
		}
		for k := range held.CustomFields {
			if _, ok := exact[k]; !ok {
				exact[k] = json.RawMessage("null")
			}
		}
		in.CustomFields.Value = exact
	}
	values, err := checkCustomValues(ctx, q, im.accountID, in.CustomFields)
	if err != nil {
		return fail(err)
	}
	attrs, didChange, err := applyPatch(ctx, q, im.accountID, id, in, values, false)
	if err != nil {
		return fail(err)
	}
	if rec.HasTagIDs {
		for _, t := range held.TagIDs {
			if slices.Contains(tags, t) {
				continue
			}
			if _, err := q.exec(ctx, `DELETE FROM person_tags WHERE account_id = $1 AND person_id = $2 AND tag_id = $3`,
				im.accountID, id, t); err != nil {
				return err
			}
			didChange = true
		}
	}
	added, err := im.attachTags(id, tags)
	if err != nil {
		return fail(err)
	}
	c := upsertNoChange
	if didChange || added {
		c = changed
		if _, err := recordChange(ctx, q, recorded{accountID: im.accountID, personID: id, c: c, attrs: attrs, w: im.w}, false); err != nil {
			return fail(err)
		}
		im.changed = append(im.changed, id)
		im.counts.Updated++
	} else {
		im.counts.Unchanged++
	}
	// The dates last: a change just stamped the person seen now.
	created, lastSeen := held.DateCreated.UnixMilli(), held.DateLastSeen.UnixMilli()
	if rec.DateCreated != nil {
		created = rec.DateCreated.UnixMilli()
	}
	if rec.DateLastSeen != nil {
		lastSeen = rec.DateLastSeen.UnixMilli()
	}
	if c == changed || created != held.DateCreated.UnixMilli() || lastSeen != held.DateLastSeen.UnixMilli() {
		if _, err := q.exec(ctx, `UPDATE persons SET created_at = $3, last_seen_at = $4 WHERE account_id = $1 AND id = $2`,
			im.accountID, id, created, lastSeen); err != nil {
			return err
		}
	}
	return nil
}
