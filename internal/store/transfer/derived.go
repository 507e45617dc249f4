package transfer

import (
	"context"
	"fmt"
	"time"

	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/store/postgres"
	"github.com/pds-dev/pds/internal/store/sqlite"
)

// rebuildAll derives, in the target's transaction and once every row is
// in, what the held triggers would have derived a row at a time: the
// timelines' deltas (persons by last-seen time; breadcrumbs by activity
// time, in all and by flavor) and the tag bits' deltas, one delta a
// bucket or a link, as migrations 00008 and 00050 start them. The fold
// (finish) turns them into timeline_counts and tag_bits; until it has,
// readers add the deltas themselves, as they do for any write.
var rebuildAll = []string{
	`INSERT INTO timeline_deltas (account_id, series, key, at_ms, n)
		SELECT account_id, 'persons', '', last_seen_at, COUNT(*) FROM persons GROUP BY account_id, last_seen_at`,
	`INSERT INTO timeline_deltas (account_id, series, key, at_ms, n)
		SELECT account_id, 'breadcrumbs', '', activity_at, COUNT(*) FROM breadcrumbs GROUP BY account_id, activity_at`,
	`INSERT INTO timeline_deltas (account_id, series, key, at_ms, n)
		SELECT account_id, 'breadcrumbs', flavor, activity_at, COUNT(*) FROM breadcrumbs GROUP BY account_id, flavor, activity_at`,
	`INSERT INTO tag_bit_deltas (account_id, tag_id, ord, n)
		SELECT pt.account_id, pt.tag_id, p.ord, 1 FROM person_tags pt JOIN persons p ON p.id = pt.person_id`,
}

// finish runs after the commit: the planner's statistics of the tables
// written (PostgreSQL), then, through the store as pds serve opens it, an
// erasure the source's snapshot caught under way finished (SQLite erases
// a person's breadcrumbs in chunks: its record, erasure_purges, was
// copied) and every delta folded.
func finish(ctx context.Context, o Options, dst target, written []string) error {
	if err := dst.analyze(ctx, append(written, "timeline_deltas", "tag_bit_deltas")); err != nil {
		return err
	}
	var (
		st  store.Store
		err error
	)
	if IsPostgres(o.To) {
		st, err = postgres.Open(ctx, o.To, postgres.Options{Secrets: o.Secrets})
	} else {
		st, err = sqlite.OpenWith(ctx, o.To, sqlite.Options{Secrets: o.Secrets})
	}
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
