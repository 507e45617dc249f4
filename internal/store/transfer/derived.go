package transfer

import (
	"context"
	"fmt"
	"time"

	"github.com/pds-dev/pds/internal/store/engines"
)

// rebuildAll derives, in the target's transaction and once every row is
// in, what the held triggers would have derived a row at a time. The
// timelines (persons by last-seen time; breadcrumbs by activity time, in
// all and by flavor) are counted straight into timeline_counts: each
// level's buckets summed from the level below, the first from the rows
// themselves, so that a level costs a pass over the one below rather than
// a delta per row folded at every level (at a million persons and three
// million breadcrumbs, 49 million bucket updates). The tag bits' deltas,
// one a link, are written as migration 00050 starts them, for the fold
// (finish) to turn into tag_bits; until it has, readers add them, as they
// do for any write.
var rebuildAll = append(timelineCounts(), `INSERT INTO tag_bit_deltas (account_id, tag_id, ord, n)
		SELECT pt.account_id, pt.tag_id, p.ord, 1 FROM person_tags pt JOIN persons p ON p.id = pt.person_id`)

// timelineCounts is the statements that fill timeline_counts.
func timelineCounts() []string {
	out := []string{
		`INSERT INTO timeline_counts (account_id, series, key, level, bucket, n)
		SELECT account_id, 'persons', '', 0, last_seen_at, COUNT(*) FROM persons GROUP BY account_id, last_seen_at`,
		`INSERT INTO timeline_counts (account_id, series, key, level, bucket, n)
		SELECT account_id, 'breadcrumbs', '', 0, activity_at, COUNT(*) FROM breadcrumbs GROUP BY account_id, activity_at`,
		`INSERT INTO timeline_counts (account_id, series, key, level, bucket, n)
		SELECT account_id, 'breadcrumbs', flavor, 0, activity_at, COUNT(*) FROM breadcrumbs GROUP BY account_id, flavor, activity_at`,
	}
	// A bucket of level l holds timelineFanout buckets of level l-1:
	// floor(t / 64^l) = floor(floor(t / 64^(l-1)) / 64), before 1970 too.
	parent := `((bucket - ((bucket % 64) + 64) % 64) / 64)`
	for l := 1; l < timelineLevels; l++ {
		out = append(out, fmt.Sprintf(`INSERT INTO timeline_counts (account_id, series, key, level, bucket, n)
		SELECT account_id, series, key, %d, %s, SUM(n) FROM timeline_counts WHERE level = %d
		GROUP BY account_id, series, key, %s`, l, parent, l-1, parent))
	}
	return out
}

// timelineLevels and the fanout of 64 are sqlstore's (timeline.go): the
// transfer test checks the counts it derives against the fold's.
const timelineLevels = 7

// finish runs after the commit: the planner's statistics of the tables
// written (PostgreSQL), then, through the store as pds serve opens it, an
// erasure the source's snapshot caught under way finished (SQLite erases
// a person's breadcrumbs in chunks: its record, erasure_purges, was
// copied) and the tag bits' deltas folded.
func finish(ctx context.Context, o Options, dst target, written []string) error {
	if err := dst.analyze(ctx, append(written, "timeline_counts", "tag_bit_deltas")); err != nil {
		return err
	}
	dst.close()
	st, err := engines.Open(ctx, o.To, engines.Options{Secrets: o.Secrets})
	if err != nil {
		return err
	}
	defer st.Close()
	f, ok := st.(interface {
		FinishErasures(context.Context, time.Time) error
		FoldTimelines(context.Context) error
	})
	if !ok {
		return fmt.Errorf("the %s store cannot fold its derived tables", engineOf(o.To))
	}
	if err := f.FinishErasures(ctx, time.Now().UTC()); err != nil {
		return fmt.Errorf("finish the erasures under way: %w", err)
	}
	return f.FoldTimelines(ctx)
}
