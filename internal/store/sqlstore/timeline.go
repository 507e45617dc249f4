package sqlstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/pds-dev/pds/internal/domain"
)

// Timelines keep exact per-account counts of rows by time: persons by last
// seen, breadcrumbs by activity (all of them, and per flavor). A list's
// total is then a sum over a few buckets, and a deep page starts with a
// short index read inside one millisecond instead of an OFFSET walk over
// every row before it.
//
// Buckets come in levels: level l spans 64^l milliseconds, so any range is
// covered by at most 63 buckets of each level on either side, and finding
// the bucket that holds the k-th row takes one step down per level. Triggers
// record every change as a delta (timeline_deltas); a background fold moves
// deltas into the buckets (timeline_counts), and readers add the deltas not
// yet folded, so counts are exact whether or not the fold has run.

const (
	timelineLevels = 7
	timelineFanout = 64
	// timelineMin and timelineMax bound every stored time (years -285,000
	// to 285,000), so that bucket arithmetic never overflows.
	timelineMin = -(int64(1) << 53)
	timelineMax = int64(1) << 53
)

// timeline names one series of counts of an account.
type timeline struct {
	account, series, key string
}

func personsTimeline(account string) timeline { return timeline{account, "persons", ""} }

// breadcrumbsTimeline counts every breadcrumb of the account, or those of
// one flavor.
func breadcrumbsTimeline(account string, flavor *string) timeline {
	if flavor == nil {
		return timeline{account, "breadcrumbs", ""}
	}
	return timeline{account, "breadcrumbs", *flavor}
}

// levelWidth is the width of a bucket of level l in milliseconds; a
// level-0 bucket is one millisecond, so a deep page walks at most the rows
// of one millisecond.
func levelWidth(l int) int64 {
	w := int64(1)
	for range l {
		w *= timelineFanout
	}
	return w
}

// floorDiv divides rounding down, also for times before 1970.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func ceilDiv(a, b int64) int64 { return -floorDiv(-a, b) }

// span is the buckets [from, to) of one level.
type span struct {
	level    int
	from, to int64
}

// covers reports whether the level-0 bucket b0 lies in s.
func (s span) covers(b0 int64) bool {
	w := levelWidth(s.level)
	return b0 >= s.from*w && b0 < s.to*w
}

// cover splits the level-0 buckets [from, to) into the fewest spans of whole
// buckets, in ascending order: finer levels at the edges, coarser inside.
func cover(from, to int64) []span {
	var left, right []span
	level := 0
	for from < to {
		if level == timelineLevels-1 {
			left = append(left, span{level, from, to})
			break
		}
		up, down := ceilDiv(from, timelineFanout)*timelineFanout, floorDiv(to, timelineFanout)*timelineFanout
		if up >= down {
			left = append(left, span{level, from, to})
			break
		}
		if from < up {
			left = append(left, span{level, from, up})
		}
		if down < to {
			right = append(right, span{level, down, to})
		}
		from, to, level = up/timelineFanout, down/timelineFanout, level+1
	}
	for i := len(right) - 1; i >= 0; i-- {
		left = append(left, right[i])
	}
	return left
}

// timelineRange is the part of a timeline a list reads: the rows at or
// after lo and before hi, in milliseconds.
type timelineRange struct {
	tl     timeline
	lo, hi int64
}

// position is where the k-th row of a range (0-based, in list order) is
// found: the rows from bound on, in list order, skipping skip of them.
// bound is an inclusive lower bound for an ascending list and an exclusive
// upper bound for a descending one.
type position struct {
	bound int64
	skip  int
}

// nearby is how far into a range a page may start and still be read with a
// plain OFFSET from the range's edge: cheaper than stepping down the levels.
const nearby = 256

// summary is what one list reads of a range: the sums of the bucket spans
// that cover it.
type summary struct {
	spans []span
	sums  []int
}

func (m summary) total() int {
	n := 0
	for _, v := range m.sums {
		n += v
	}
	return n
}

// summarize reads the summary of the range in one statement.
func (r timelineRange) summarize(ctx context.Context, q querier) (summary, error) {
	m := summary{spans: cover(r.lo, r.hi)}
	var err error
	m.sums, err = r.spanSums(ctx, q, m.spans)
	return m, err
}

// locate finds the k-th row (0-based, k below the total) of the range in
// ascending order when desc is false, descending otherwise.
func (r timelineRange) locate(ctx context.Context, q querier, m summary, k int, desc bool) (position, error) {
	if k < nearby {
		if desc {
			return position{bound: r.hi, skip: k}, nil
		}
		return position{bound: r.lo, skip: k}, nil
	}
	for i := range m.spans {
		if desc {
			i = len(m.spans) - 1 - i
		}
		if k >= m.sums[i] {
			k -= m.sums[i]
			continue
		}
		// The row is in this span: step down one level at a time to the
		// millisecond that holds it.
		sp := m.spans[i]
		for {
			bucket, before, err := r.bucketOf(ctx, q, sp, k, desc)
			if err != nil {
				return position{}, err
			}
			k -= before
			if sp.level == 0 {
				if desc {
					return position{bound: bucket + 1, skip: k}, nil
				}
				return position{bound: bucket, skip: k}, nil
			}
			sp = span{sp.level - 1, bucket * timelineFanout, (bucket + 1) * timelineFanout}
		}
	}
	return position{}, fmt.Errorf("timeline %v: row past the end of the range", r.tl)
}

// spanSums returns the number of rows in each span, unfolded deltas
// included, in one statement.
func (r timelineRange) spanSums(ctx context.Context, q querier, spans []span) ([]int, error) {
	var (
		args  sqlArgs
		parts []string
	)
	account, series, key := args.add(r.tl.account), args.add(r.tl.series), args.add(r.tl.key)
	for i, s := range spans {
		parts = append(parts, fmt.Sprintf(`SELECT %d AS span, 0 AS b, n FROM timeline_counts
			WHERE account_id = %s AND series = %s AND key = %s AND level = %s AND bucket >= %s AND bucket < %s`,
			i, account, series, key, args.add(s.level), args.add(s.from), args.add(s.to)))
	}
	first, last := spans[0], spans[len(spans)-1]
	parts = append(parts, deltasSQL(&args, account, series, key, first.from*levelWidth(first.level), last.to*levelWidth(last.level)))
	sums := make([]int, len(spans))
	err := scanBuckets(ctx, q, `SELECT span, b, CAST(SUM(n) AS BIGINT) FROM (`+strings.Join(parts, ` UNION ALL `)+`) c GROUP BY span, b`, args,
		func(i int, b0 int64, n int) {
			if i >= 0 {
				sums[i] += n
				return
			}
			for i, s := range spans {
				if s.covers(b0) {
					sums[i] += n
					return
				}
			}
		})
	return sums, err
}

// deltasSQL selects the unfolded deltas of [lo, hi), each at its level-0
// bucket (its millisecond), as rows (span -1, bucket, n) to join spanSums'
// and bucketOf's.
func deltasSQL(args *sqlArgs, account, series, key string, lo, hi int64) string {
	return `SELECT -1 AS span, at_ms AS b, n FROM timeline_deltas
		WHERE account_id = ` + account + ` AND series = ` + series + ` AND key = ` + key +
		` AND at_ms >= ` + args.add(lo) + ` AND at_ms < ` + args.add(hi)
}

// scanBuckets runs a statement of (span, bucket, n) rows through fn.
func scanBuckets(ctx context.Context, q querier, query string, args sqlArgs, fn func(span int, bucket int64, n int)) error {
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			i int
			b int64
			n int
		)
		if err := rows.Scan(&i, &b, &n); err != nil {
			return err
		}
		fn(i, b, n)
	}
	return rows.Err()
}

// bucketOf finds the bucket of span s that holds its k-th row in list
// order, and how many rows of s come before that bucket, in one statement.
func (r timelineRange) bucketOf(ctx context.Context, q querier, s span, k int, desc bool) (bucket int64, before int, err error) {
	var args sqlArgs
	account, series, key := args.add(r.tl.account), args.add(r.tl.series), args.add(r.tl.key)
	w := levelWidth(s.level)
	query := `SELECT span, b, CAST(SUM(n) AS BIGINT) FROM (SELECT 0 AS span, bucket AS b, n FROM timeline_counts
		WHERE account_id = ` + account + ` AND series = ` + series + ` AND key = ` + key +
		` AND level = ` + args.add(s.level) + ` AND bucket >= ` + args.add(s.from) + ` AND bucket < ` + args.add(s.to) +
		` UNION ALL ` + deltasSQL(&args, account, series, key, s.from*w, s.to*w) + `) c GROUP BY span, b`
	var buckets []bucketCount
	err = scanBuckets(ctx, q, query, args, func(i int, b int64, n int) {
		if i < 0 {
			b = floorDiv(b, w)
		}
		buckets = addCount(buckets, b, n, desc)
	})
	if err != nil {
		return 0, 0, err
	}
	for _, b := range buckets {
		if k < before+b.n {
			return b.bucket, before, nil
		}
		before += b.n
	}
	return 0, 0, fmt.Errorf("timeline %v: row %d not in level %d buckets [%d, %d) of %d rows", r.tl, k, s.level, s.from, s.to, before)
}

type bucketCount struct {
	bucket int64
	n      int
}

// addCount adds n to bucket b of a list kept in list order.
func addCount(list []bucketCount, b int64, n int, desc bool) []bucketCount {
	for i := range list {
		if list[i].bucket == b {
			list[i].n += n
			return list
		}
		if (list[i].bucket > b) != desc {
			return append(list[:i], append([]bucketCount{{b, n}}, list[i:]...)...)
		}
	}
	return append(list, bucketCount{b, n})
}

// floorDivSQL is SQL for x divided by w rounding down on both engines, whose
// integer division rounds toward zero.
func floorDivSQL(x, w string) string {
	return `((` + x + ` - ((` + x + ` % ` + w + `) + ` + w + `) % ` + w + `) / ` + w + `)`
}

// timelinePage reads one page of a list in a timeline's order, its first
// row located through the counts; page reads limit rows from pos on.
func timelinePage[T any](ctx context.Context, q querier, r timelineRange, desc bool, p domain.PageRequest,
	page func(pos position, limit int) ([]T, error)) ([]T, int, error) {
	if err := checkPage(p); err != nil {
		return nil, 0, err
	}
	r.lo, r.hi = max(r.lo, timelineMin), min(r.hi, timelineMax)
	if r.lo >= r.hi {
		return []T{}, 0, nil
	}
	m, err := r.summarize(ctx, q)
	if err != nil {
		return nil, 0, err
	}
	total := m.total()
	if total <= p.Offset() {
		return []T{}, total, nil
	}
	pos, err := r.locate(ctx, q, m, p.Offset(), desc)
	if err != nil {
		return nil, 0, err
	}
	items, err := page(pos, p.Size)
	return items, total, err
}
