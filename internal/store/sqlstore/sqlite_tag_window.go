package sqlstore

import (
	"context"
	"strings"

	"github.com/pds-dev/pds/internal/domain"
)

// IntersectTags reads tag windows by an INTERSECT of the tags' index
// ranges read in index order, which SQLite merges in one pass (it would
// probe one tag per holder of another; merging is linear). SQLite merges
// its INTERSECT backwards as cheaply when the compound itself is ordered and
// cut (ordered from outside, as a subquery, it would sort every holder in
// the window first).
var IntersectTags TagWindows = intersectTags{}

type intersectTags struct{}

func (intersectTags) page(ctx context.Context, q querier, accountID string, tags []string, seen int64,
	_ string, _ sqlArgs, newest bool, p domain.PageRequest, total int) ([]string, error) {
	span, ok := spanOf(q, p, total)
	if !ok {
		return []string{}, nil
	}
	// The compound itself, not holders' subquery of it, takes the order.
	compound, args := tagIntersect(accountID, tags, `>=`, seen)
	order := seenOrderBy(`last_seen_at, person_id`, newest)
	if span.fromEnd {
		order = reversedOrder(order)
	}
	ids, err := queryAll(ctx, q, scanSeenID, compound+` ORDER BY `+order+
		` LIMIT `+args.add(span.limit)+` OFFSET `+args.add(span.skip), args...)
	turn(span, ids)
	return ids, err
}

func (intersectTags) holdersSeen(accountID string, tags []string, op string, seen int64) (string, sqlArgs) {
	compound, args := tagIntersect(accountID, tags, op, seen)
	return `(` + compound + `) h`, args
}

// tagIntersect is SQLite's merge of the holders (last_seen_at, person_id)
// of every one of tags whose last-seen time compares by op with seen: each
// tag's holders in the range, one index range in list order, intersected.
func tagIntersect(accountID string, tags []string, op string, seen int64) (string, sqlArgs) {
	var args sqlArgs
	account := args.add(accountID)
	at := args.add(seen)
	parts := make([]string, len(tags))
	for i, tag := range tags {
		parts[i] = `SELECT last_seen_at, person_id FROM person_tags WHERE account_id = ` + account +
			` AND tag_id = ` + args.add(tag) + ` AND last_seen_at ` + op + ` ` + at
	}
	return strings.Join(parts, ` INTERSECT `), args
}
