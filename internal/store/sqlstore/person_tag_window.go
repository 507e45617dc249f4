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
//
// The total is counted on whichever side of since holds fewer persons:
// merging the holders in the window, or, when most persons were seen
// since, the tag bits' count of all holders less those merged before the
// window.
func personTagWindow(ctx context.Context, q querier, accountID string, since time.Time, tags []string, newest bool,
	p domain.PageRequest) ([]domain.Person, int, error) {
	if err := checkPage(p); err != nil {
		return nil, 0, err
	}
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
	if q.s.dialect.MergeJoinTags != "" {
		if _, err := q.exec(ctx, q.s.dialect.MergeJoinTags); err != nil {
			return nil, 0, err
		}
	}

	seen := ceilMillis(since)
	holders, args := tagHoldersSeen(q, accountID, tags, `>=`, seen)
	total, err := tagWindowTotal(ctx, q, accountID, tags, seen, holders, args)
	if err != nil {
		return nil, 0, err
	}
	ids, err := tagWindowPage(ctx, q, accountID, tags, seen, holders, args, newest, p, total)
	if err != nil {
		return nil, 0, err
	}
	page, err := personsByID(ctx, q, accountID, ids)
	return page, total, err
}

// tagWindowPage reads the ids of page p of the total holders of tags seen
// at or after seen, which holders (with args) selects. A page past the
// middle is read from the far end
// (spanOf): PostgreSQL merges its join backwards as cheaply, and SQLite its
// INTERSECT when the compound itself is ordered and cut (ordered from
// outside, as a subquery, it would sort every holder in the window first).
func tagWindowPage(ctx context.Context, q querier, accountID string, tags []string, seen int64,
	holders string, args sqlArgs, newest bool, p domain.PageRequest, total int) ([]string, error) {
	return q.s.dialect.TagWindows.page(ctx, q, accountID, tags, seen, holders, args, newest, p, total)
}

// scanSeenID scans a holder's last-seen time and id, and keeps the id.
func scanSeenID(sc scanner) (string, error) {
	var (
		seen int64
		id   string
	)
	err := sc.Scan(&seen, &id)
	return id, err
}

// tagWindowTotal counts the holders of tags seen at or after seen, which
// holders (with args) selects, on whichever side of seen holds fewer of the
// account's persons.
func tagWindowTotal(ctx context.Context, q querier, accountID string, tags []string, seen int64, holders string, args sqlArgs) (int, error) {
	before, after, err := personsAround(ctx, q, accountID, seen)
	if err != nil {
		return 0, err
	}
	if before >= after {
		return countRows(ctx, q, holders, args)
	}
	all, err := tagHolders(ctx, q, accountID, tags)
	if err != nil {
		return 0, err
	}
	earlier, earlierArgs := tagHoldersSeen(q, accountID, tags, `<`, seen)
	n, err := countRows(ctx, q, earlier, earlierArgs)
	return all - n, err
}

// personsAround counts the account's persons last seen before seen and at
// or after it, in one statement.
func personsAround(ctx context.Context, q querier, accountID string, seen int64) (before, after int, err error) {
	seen = min(max(seen, timelineMin), timelineMax)
	lower := cover(timelineMin, seen)
	spans := append(lower, cover(seen, timelineMax)...)
	sums, err := timelineRange{tl: personsTimeline(accountID), lo: timelineMin, hi: timelineMax}.spanSums(ctx, q, spans)
	if err != nil {
		return 0, 0, err
	}
	for i, n := range sums {
		if i < len(lower) {
			before += n
		} else {
			after += n
		}
	}
	return before, after, nil
}

// tagHoldersSeen selects (as h: last_seen_at, person_id) the holders of
// every one of tags whose last-seen time compares by op ("<" or ">=") with
// seen, each tag's holders read as one index range in list order.
func tagHoldersSeen(q querier, accountID string, tags []string, op string, seen int64) (string, sqlArgs) {
	return q.s.dialect.TagWindows.holdersSeen(accountID, tags, op, seen)
}

// TagWindows is how an engine reads the holders of every one of a list of
// tags within a window (Dialect.TagWindows): IntersectTags, an INTERSECT
// of the tags' index ranges (SQLite, sqlite_tag_window.go), or JoinTags,
// each further tag joined on the list order, the join left to the planner.
type TagWindows interface {
	// page reads the ids of page p of the total holders (see tagWindowPage).
	page(ctx context.Context, q querier, accountID string, tags []string, seen int64,
		holders string, args sqlArgs, newest bool, p domain.PageRequest, total int) ([]string, error)
	// holdersSeen selects the holders seen by op of seen (see tagHoldersSeen).
	holdersSeen(accountID string, tags []string, op string, seen int64) (string, sqlArgs)
}

// JoinTags reads tag windows by joins, for a planner that chooses the join
// of a semi-join itself (PostgreSQL merges its join backwards as cheaply).
var JoinTags TagWindows = joinTags{}

type joinTags struct{}

func (joinTags) page(ctx context.Context, q querier, _ string, _ []string, _ int64,
	holders string, args sqlArgs, newest bool, p domain.PageRequest, total int) ([]string, error) {
	return pageOf(ctx, q, `h.person_id`, holders, seenOrderBy(`h.last_seen_at, h.person_id`, newest), args, p, total, scanID)
}

func (joinTags) holdersSeen(accountID string, tags []string, op string, seen int64) (string, sqlArgs) {
	var args sqlArgs
	account := args.add(accountID)
	at := args.add(seen)
	// Each further tag's holders joined on the list order, which a merge
	// join reads off both indexes with no sort.
	where := ` WHERE h.account_id = ` + account + ` AND h.tag_id = ` + args.add(tags[0]) + ` AND h.last_seen_at ` + op + ` ` + at
	var joins strings.Builder
	for i, tag := range tags[1:] {
		o := "o" + strconv.Itoa(i)
		fmt.Fprintf(&joins, ` JOIN person_tags %[1]s ON %[1]s.account_id = h.account_id AND %[1]s.tag_id = %[2]s`+
			` AND %[1]s.last_seen_at = h.last_seen_at AND %[1]s.person_id = h.person_id AND %[1]s.last_seen_at %[3]s %[4]s`,
			o, args.add(tag), op, at)
	}
	return `person_tags h` + joins.String() + where, args
}
