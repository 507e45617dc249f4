package sqlstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store/sqlstore"
	"github.com/pds-dev/pds/internal/testenv"
)

// TestCover checks that the spans of a range are whole buckets, in order,
// cover the range exactly, and are few.
func TestCover(t *testing.T) {
	t.Parallel()
	width := func(level int64) int64 {
		w := int64(1)
		for range level {
			w *= 64
		}
		return w
	}
	for _, tc := range []struct{ from, to int64 }{
		{0, 1}, {0, 64}, {1, 64}, {0, 65}, {63, 4097}, {-5, 5}, {-1 << 40, 1 << 40},
		{1_763_000_000, 1_765_600_000}, {-(1 << 43), 1 << 43}, {100, 101}, {4095, 4097},
	} {
		spans := sqlstore.Cover(tc.from, tc.to)
		at := tc.from
		for _, s := range spans {
			w := width(s[0])
			if s[1] >= s[2] || s[1]*w != at {
				t.Fatalf("cover(%d, %d) = %v: span %v does not start at %d", tc.from, tc.to, spans, s, at)
			}
			at = s[2] * w
		}
		if at != tc.to {
			t.Fatalf("cover(%d, %d) = %v ends at %d", tc.from, tc.to, spans, at)
		}
		if len(spans) > 13 {
			t.Fatalf("cover(%d, %d) has %d spans", tc.from, tc.to, len(spans))
		}
	}
}

// TestTimelineListsMatchCounting lists persons in window mode (with and
// without tag_ids) and breadcrumbs and compares every page and total with a plain
// COUNT and OFFSET over the same rows: with every change still a delta,
// after persons moved, links were broken and made and breadcrumbs were
// replayed, and after folding.
func TestTimelineListsMatchCounting(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rs := openCounting(t, eng)
		rs.StopFolding()
		ctx := context.Background()
		rng := rand.New(rand.NewPCG(8, 8))
		acc, other := domain.NewID("acc"), domain.NewID("acc")
		base := seedEpoch.UnixMilli()
		for _, a := range []string{acc, other} {
			rs.exec(t, `INSERT INTO accounts (id, name, created_at) VALUES (?, ?, ?)`, a, "timeline", base)
		}
		// Times cluster the way imports and bursts do: many in one
		// millisecond, many in one second, and some spread over weeks.
		when := func() int64 {
			switch rng.IntN(4) {
			case 0:
				return base
			case 1:
				return base + rng.Int64N(1000)
			case 2:
				return base + rng.Int64N(200_000)
			default:
				return base + rng.Int64N(40*24*3600*1000) - 20*24*3600*1000
			}
		}
		var persons, crumbs [][]any
		for i := range 1500 {
			a := acc
			if i%10 == 0 {
				a = other
			}
			id := fmt.Sprintf("per_%05d", i)
			persons = append(persons, []any{id, a, domain.UpsertCreated, base, when()})
			for j := range 2 {
				activity := when()
				if rng.IntN(50) == 0 {
					activity = -rng.Int64N(1 << 40) // before 1970
				}
				crumbs = append(crumbs, []any{fmt.Sprintf("bc_%05d_%d", i, j), a, []string{"web", "mail", "call"}[rng.IntN(3)], id, activity, base})
			}
		}
		// Three tags held by a half, a third and a fifth of the persons,
		// and an archived one held by everyone.
		tags := []string{domain.NewID("tag"), domain.NewID("tag"), domain.NewID("tag"), domain.NewID("tag")}
		var tagRows, links [][]any
		for i, tag := range tags {
			var archived any
			if i == 3 {
				archived = base
			}
			tagRows = append(tagRows, []any{tag, acc, tag, "person", base, archived})
		}
		for i, p := range persons {
			if p[1] != acc {
				continue
			}
			for j, every := range []int{2, 3, 5, 1} {
				if rng.IntN(every) == 0 || (j == 3 && i%2 == 0) {
					links = append(links, []any{acc, p[0], tags[j], base, p[4]})
				}
			}
		}
		rs.insertRows(t, "persons", "id, account_id, upsert_result, created_at, last_seen_at", persons)
		rs.insertRows(t, "tags", "id, account_id, name, context, created_at, archived_at", tagRows)
		rs.insertRows(t, "person_tags", "account_id, person_id, tag_id, created_at, last_seen_at", links)
		rs.insertRows(t, "breadcrumbs", "id, account_id, flavor, person_id, activity_at, created_at", crumbs)

		check := func(stage string) {
			t.Helper()
			for range 25 {
				since := time.UnixMilli(base + rng.Int64N(25*24*3600*1000) - 21*24*3600*1000)
				if rng.IntN(4) == 0 {
					since = time.UnixMilli(base + rng.Int64N(2000) - 1000).Add(time.Duration(rng.IntN(1000)) * time.Microsecond)
				}
				page := domain.PageRequest{Page: 1 + rng.IntN(40), Size: 1 + rng.IntN(30)}
				got, total, err := rs.ListPersons(ctx, acc, domain.PersonSelection{Mode: domain.PersonWindow, Since: since}, page)
				if err != nil {
					t.Fatal(err)
				}
				lo := since.UnixMilli()
				if since.After(time.UnixMilli(lo)) {
					lo++
				}
				want, wantTotal := rs.ids(t, `persons WHERE account_id = ? AND last_seen_at >= ?`, `last_seen_at, id`, page, acc, lo)
				if total != wantTotal || !slices.Equal(personIDs(got), want) {
					t.Fatalf("%s: persons since %v, %+v: total %d, %v; want %d, %v", stage, since, page, total, personIDs(got), wantTotal, want)
				}

				// The same window with tags, the archived one among them now and then.
				held := []string{tags[rng.IntN(3)], tags[rng.IntN(4)], tags[rng.IntN(3)]}[:1+rng.IntN(3)]
				page.Page = 1 + rng.IntN(10)
				got, total, err = rs.ListPersons(ctx, acc, domain.PersonSelection{Mode: domain.PersonWindow, Since: since, TagIDs: held}, page)
				if err != nil {
					t.Fatal(err)
				}
				where, args := `persons WHERE account_id = ? AND last_seen_at >= ?`, []any{acc, lo}
				for _, tag := range held {
					where += ` AND id IN (SELECT person_id FROM person_tags pt JOIN tags t ON t.id = pt.tag_id WHERE t.archived_at IS NULL AND t.id = ?)`
					args = append(args, tag)
				}
				want, wantTotal = rs.ids(t, where, `last_seen_at, id`, page, args...)
				if total != wantTotal || !slices.Equal(personIDs(got), want) {
					t.Fatalf("%s: persons since %v with tags %v, %+v: total %d, %v; want %d, %v", stage, since, held, page, total, personIDs(got), wantTotal, want)
				}
			}
			for range 40 {
				var f domain.BreadcrumbFilter
				where, args := `account_id = ?`, []any{acc}
				if rng.IntN(2) == 0 {
					flavor := []string{"web", "mail", "call", "none"}[rng.IntN(4)]
					f.Flavor = &flavor
					where, args = where+` AND flavor = ?`, append(args, flavor)
				}
				if rng.IntN(2) == 0 {
					since := time.UnixMilli(when()).Add(time.Duration(rng.IntN(1000)) * time.Microsecond)
					f.Since = &since
					lo := since.UnixMilli()
					if since.After(time.UnixMilli(lo)) {
						lo++
					}
					where, args = where+` AND activity_at >= ?`, append(args, lo)
				}
				if rng.IntN(2) == 0 {
					until := time.UnixMilli(when())
					f.Until = &until
					where, args = where+` AND activity_at <= ?`, append(args, until.UnixMilli())
				}
				page := domain.PageRequest{Page: 1 + rng.IntN(60), Size: 1 + rng.IntN(30)}
				got, total, err := rs.ListBreadcrumbs(ctx, acc, f, page)
				if err != nil {
					t.Fatal(err)
				}
				want, wantTotal := rs.ids(t, `breadcrumbs WHERE `+where, `activity_at DESC, id DESC`, page, args...)
				var ids []string
				for _, b := range got {
					ids = append(ids, b.ID)
				}
				if total != wantTotal || !slices.Equal(ids, want) {
					t.Fatalf("%s: breadcrumbs %s %v, %+v: total %d, %v; want %d, %v", stage, where, args, page, total, ids, wantTotal, want)
				}
			}
		}

		check("deltas only")
		if err := rs.FoldTimelines(ctx); err != nil {
			t.Fatal(err)
		}
		check("folded")
		// Persons seen again move forward, some within their second;
		// replayed breadcrumbs change flavor and time.
		for i := 0; i < 1500; i += 3 {
			rs.exec(t, `UPDATE persons SET last_seen_at = last_seen_at + ? WHERE id = ?`, rng.Int64N(3*24*3600*1000), fmt.Sprintf("per_%05d", i))
			rs.exec(t, `UPDATE breadcrumbs SET flavor = ?, activity_at = ? WHERE id = ?`, "mail", when(), fmt.Sprintf("bc_%05d_0", i))
		}
		// Links are broken and made, some of them twice over: the tag
		// bits' deltas must follow.
		for i := 1; i < 1500; i += 7 {
			id := fmt.Sprintf("per_%05d", i)
			rs.exec(t, `DELETE FROM person_tags WHERE person_id = ? AND tag_id = ?`, id, tags[0])
			if i%10 == 0 {
				continue // the other account's
			}
			for _, tag := range []string{tags[1], tags[0]}[:1+i%2] {
				rs.exec(t, `INSERT INTO person_tags (account_id, person_id, tag_id, created_at, last_seen_at)
					SELECT account_id, id, ?, ?, last_seen_at FROM persons WHERE id = ? ON CONFLICT DO NOTHING`, tag, base, id)
			}
		}
		check("moved, partly folded")
		if err := rs.FoldTimelines(ctx); err != nil {
			t.Fatal(err)
		}
		check("moved and folded")
		// Buckets the persons left are gone, not kept at zero.
		var empty, deltas int
		if err := rs.db.QueryRow(`SELECT (SELECT COUNT(*) FROM timeline_counts WHERE n = 0), (SELECT COUNT(*) FROM timeline_deltas)`).Scan(&empty, &deltas); err != nil {
			t.Fatal(err)
		}
		if empty != 0 || deltas != 0 {
			t.Fatalf("after folding: %d empty buckets and %d deltas left", empty, deltas)
		}
		if err := rs.db.QueryRow(`SELECT COUNT(*) FROM tag_bit_deltas`).Scan(&deltas); err != nil {
			t.Fatal(err)
		}
		if deltas != 0 {
			t.Fatalf("after folding: %d tag bit deltas left", deltas)
		}
	})
}

// ids reads one page of ids the plain way, with the total.
func (rs rawStore) ids(t *testing.T, fromWhere, orderBy string, page domain.PageRequest, args ...any) ([]string, int) {
	t.Helper()
	var total int
	q := `SELECT COUNT(*) FROM ` + fromWhere
	if rs.Engine() == "postgres" {
		n := 0
		q = rebindAll(q, func() string { n++; return fmt.Sprintf("$%d", n) })
	}
	if err := rs.db.QueryRow(q, args...).Scan(&total); err != nil {
		t.Fatal(err)
	}
	q = fmt.Sprintf(`SELECT id FROM %s ORDER BY %s LIMIT %d OFFSET %d`, fromWhere, orderBy, page.Size, page.Offset())
	if rs.Engine() == "postgres" {
		n := 0
		q = rebindAll(q, func() string { n++; return fmt.Sprintf("$%d", n) })
	}
	rows, err := rs.db.Query(q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out = append(out, id)
	}
	return out, total
}

func personIDs(ps []domain.Person) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.ID)
	}
	return out
}
