package sqlstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

// personTagWindow reads a page of the persons last seen at or after since
// that hold every one of tags. Each tag link carries its person's last-seen
// time (person_tags_seen), so the holders of the first tag in the window
// are one index range already in list order, and so are each further
// tag's: the engine merges them (an INTERSECT on SQLite, a merge join on
// PostgreSQL), with no sort and no visit to persons except for the page
// itself.
func personTagWindow(ctx context.Context, q querier, accountID string, since time.Time, tags []string, p domain.PageRequest) ([]domain.Person, int, error) {
	tags = dedupe(tags)
	// An archived or unknown tag is held by nobody that counts.
	var args sqlArgs
	account := args.add(accountID)
	var live int
	if err := q.queryRow(ctx, `SELECT COUNT(*) FROM tags WHERE account_id = `+account+
		` AND archived_at IS NULL AND id IN (`+args.inList(tags)+`)`, args...).Scan(&live); err != nil {
		return nil, 0, err
	}
	if live < len(tags) {
		return []domain.Person{}, 0, nil
	}

	args = sqlArgs{}
	account = args.add(accountID)
	seen := args.add(ceilMillis(since))
	var holders string
	if q.s.dialect.MergeIntersect {
		// Each tag's holders in the window, in list order, merged.
		parts := make([]string, len(tags))
		for i, tag := range tags {
			parts[i] = `SELECT last_seen_at, person_id FROM person_tags WHERE account_id = ` + account +
				` AND tag_id = ` + args.add(tag) + ` AND last_seen_at >= ` + seen
		}
		holders = `(` + strings.Join(parts, ` INTERSECT `) + `) h`
	} else {
		// Each further tag's holders joined on the list order, which a
		// merge join reads off both indexes with no sort.
		where := ` WHERE h.account_id = ` + account + ` AND h.tag_id = ` + args.add(tags[0]) + ` AND h.last_seen_at >= ` + seen
		var joins strings.Builder
		for i, tag := range tags[1:] {
			o := "o" + strconv.Itoa(i)
			fmt.Fprintf(&joins, ` JOIN person_tags %[1]s ON %[1]s.account_id = h.account_id AND %[1]s.tag_id = %[2]s`+
				` AND %[1]s.last_seen_at = h.last_seen_at AND %[1]s.person_id = h.person_id AND %[1]s.last_seen_at >= %[3]s`, o, args.add(tag), seen)
		}
		holders = `person_tags h` + joins.String() + where
		if q.s.dialect.MergeJoinTags != "" {
			if _, err := q.exec(ctx, q.s.dialect.MergeJoinTags); err != nil {
				return nil, 0, err
			}
		}
	}
	ids, total, err := listPage(ctx, q, `h.person_id`, holders, `h.last_seen_at, h.person_id`, args, p, scanID)
	if err != nil {
		return nil, 0, err
	}
	page, err := personsByID(ctx, q, accountID, ids)
	return page, total, err
}
