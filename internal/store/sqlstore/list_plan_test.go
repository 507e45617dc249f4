package sqlstore_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/testenv"
)

// TestHotQueryPlans runs each hot read the way the API does (window pages
// near and far, the tag filter, breadcrumb lists with and without a flavor,
// the key lookup, and the lookup of a breadcrumb's person), records every
// query it sends, and explains each one: none may read a whole table or
// walk a whole account, nor sort a list (only the rows of one page). PostgreSQL plans with sequential scans priced
// out, so on a small seeded table the test still fails when no index can
// serve a query.
func TestHotQueryPlans(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rs := openCounting(t, eng)
		rs.StopFolding()
		ctx := context.Background()
		acc, tags := rs.seedAccount(t, 3000)
		other, _ := rs.seedAccount(t, 300)
		// One breadcrumb in ten names a campaign, one in twenty a project.
		var crumbs [][]any
		for i := range 6000 {
			var campaign, project any
			if i%10 == 0 {
				campaign = fmt.Sprintf("cmp_%d", i%30)
			}
			if i%20 == 0 {
				project = "prj_1"
			}
			crumbs = append(crumbs, []any{fmt.Sprintf("bc_%s_%05d", acc, i), acc, []string{"web", "mail"}[i%2],
				seededPerson(acc, i%3000), campaign, project, seedEpoch.UnixMilli() + int64(i)*700, seedEpoch.UnixMilli()})
		}
		rs.insertRows(t, "breadcrumbs", "id, account_id, flavor, person_id, campaign_id, project_id, activity_at, created_at", crumbs)
		if err := rs.FoldTimelines(ctx); err != nil {
			t.Fatal(err)
		}
		// hook's log beside a sibling subscription's and a larger one of
		// another account, which none of hook's reads may walk.
		hook := rs.seedDeliveries(t, acc, 3000)
		sibling := rs.seedDeliveries(t, acc, 3000)
		otherHook := rs.seedDeliveries(t, other, 12000)
		// Thirty days of attempt counts, an hour a row, of each
		// subscription.
		var counts [][]any
		for _, w := range []string{hook, sibling, otherHook} {
			for h := range 720 {
				counts = append(counts, []any{w, seedEpoch.Add(-time.Duration(h) * time.Hour).UnixMilli(), 50, 2, 1})
			}
		}
		rs.insertRows(t, "webhook_attempt_counts", "webhook_id, hour, succeeded, failed, errors", counts)
		key, secret, err := service.NewKey(service.KeyRequest{AccountID: acc, Scopes: domain.AllScopes}, seedEpoch)
		if err != nil {
			t.Fatal(err)
		}
		if err := rs.CreateKey(ctx, key); err != nil {
			t.Fatal(err)
		}
		if eng.Name == "postgres" {
			rs.analyze(t)
			// A log fills over weeks, which autovacuum would have vacuumed as
			// it grew: its counts read the index alone. A transaction open
			// elsewhere on the server (another test's, a benchmark's) keeps
			// VACUUM from marking the new rows' pages all-visible, and the
			// planner would then price every read of the index with its
			// heap: the statistics say what the vacuum would have left.
			rs.exec(t, `VACUUM deliveries`)
			rs.exec(t, `UPDATE pg_class SET relallvisible = relpages WHERE oid = 'deliveries'::regclass`)
		}
		window := domain.PersonSelection{Mode: domain.PersonWindow, Since: seedEpoch.Add(-time.Hour)}
		tagged := window
		tagged.TagIDs = []string{tags[0], tags[7]}
		newest := func(sel domain.PersonSelection) domain.PersonSelection { sel.NewestFirst = true; return sel }
		web, campaign, project := "web", "cmp_0", "prj_1"
		until := seedEpoch.Add(time.Hour)
		exportSince := seedEpoch.Add(10 * time.Minute)
		deliveriesSince := seedEpoch.Add(20 * time.Minute)
		cases := []struct {
			name string
			read func() error
		}{
			{"get person", func() error {
				_, err := rs.GetPerson(ctx, acc, seededPerson(acc, 1234))
				return err
			}},
			{"window, page 1", listPersons(ctx, rs, acc, window, 1)},
			{"window, deep page", listPersons(ctx, rs, acc, window, 77)},
			{"window, last page", listPersons(ctx, rs, acc, window, 120)},
			{"window with two tags", listPersons(ctx, rs, acc, tagged, 1)},
			{"window with two tags, deep page", listPersons(ctx, rs, acc, tagged, 6)},
			// Past the middle, read from the far end (pageOf).
			{"window with two tags, last page", func() error {
				_, total, err := rs.ListPersons(ctx, acc, tagged, domain.PageRequest{Page: 1, Size: 25})
				if err != nil {
					return err
				}
				return listPersons(ctx, rs, acc, tagged, (total+24)/25)()
			}},
			// The console's persons screen: the same windows, newest first.
			{"window newest first, page 1", listPersons(ctx, rs, acc, newest(window), 1)},
			{"window newest first, deep page", listPersons(ctx, rs, acc, newest(window), 77)},
			{"window newest first, last page", listPersons(ctx, rs, acc, newest(window), 120)},
			{"window with two tags newest first", listPersons(ctx, rs, acc, newest(tagged), 1)},
			{"window with two tags newest first, last page", func() error {
				_, total, err := rs.ListPersons(ctx, acc, tagged, domain.PageRequest{Page: 1, Size: 25})
				if err != nil {
					return err
				}
				return listPersons(ctx, rs, acc, newest(tagged), (total+24)/25)()
			}},
			{"lookup by email", listPersons(ctx, rs, acc, domain.PersonSelection{Mode: domain.PersonByEmail, Key: "P2000@Seed.test"}, 1)},
			{"lookup by external_id", listPersons(ctx, rs, acc, domain.PersonSelection{Mode: domain.PersonByExternalID, Key: "ext-2000"}, 1)},
			{"breadcrumbs, page 1", listBreadcrumbs(ctx, rs, acc, domain.BreadcrumbFilter{}, 1)},
			{"breadcrumbs, deep page", listBreadcrumbs(ctx, rs, acc, domain.BreadcrumbFilter{}, 150)},
			{"breadcrumbs by flavor, deep page", listBreadcrumbs(ctx, rs, acc, domain.BreadcrumbFilter{Flavor: &web}, 70)},
			{"breadcrumbs by flavor until, deep page", listBreadcrumbs(ctx, rs, acc, domain.BreadcrumbFilter{Flavor: &web, Until: &until}, 30)},
			{"breadcrumbs by campaign", listBreadcrumbs(ctx, rs, acc, domain.BreadcrumbFilter{CampaignID: &campaign}, 1)},
			{"breadcrumbs by project, page 2", listBreadcrumbs(ctx, rs, acc, domain.BreadcrumbFilter{ProjectID: &project}, 2)},
			{"deliveries, page 1", listDeliveries(ctx, rs, acc, hook, domain.DeliveryFilter{}, 1)},
			{"deliveries, deep page", listDeliveries(ctx, rs, acc, hook, domain.DeliveryFilter{}, 50)},
			{"deliveries, last page", listDeliveries(ctx, rs, acc, hook, domain.DeliveryFilter{}, 120)},
			{"deliveries since and until", listDeliveries(ctx, rs, acc, hook, domain.DeliveryFilter{Since: &deliveriesSince, Until: &until}, 2)},
			{"deliveries failed", listDeliveries(ctx, rs, acc, hook, domain.DeliveryFilter{Status: domain.DeliveryFailed}, 1)},
			{"deliveries failed since", listDeliveries(ctx, rs, acc, hook, domain.DeliveryFilter{Status: domain.DeliveryFailed, Since: &deliveriesSince}, 1)},
			{"deliveries failed of one event", listDeliveries(ctx, rs, acc, hook, domain.DeliveryFilter{Status: domain.DeliveryFailed, Event: domain.EventPersonCreated}, 1)},
			{"deliveries of one event, deep page", listDeliveries(ctx, rs, acc, hook, domain.DeliveryFilter{Event: domain.EventPersonUpdated}, 25)},
			{"deliveries of one person", listDeliveries(ctx, rs, acc, hook, domain.DeliveryFilter{PersonID: seededPerson(acc, 7)}, 1)},
			{"deliveries of one person, failed", listDeliveries(ctx, rs, acc, hook, domain.DeliveryFilter{PersonID: seededPerson(acc, 3), Status: domain.DeliveryFailed}, 1)},
			// The console's log of every subscription of the account: a
			// merge of each one's index range, never a sort of them all.
			{"account deliveries, page 1", listAccountDeliveries(ctx, rs, acc, domain.DeliveryFilter{}, 1)},
			{"account deliveries, deep page", listAccountDeliveries(ctx, rs, acc, domain.DeliveryFilter{}, 90)},
			{"account deliveries, last page", listAccountDeliveries(ctx, rs, acc, domain.DeliveryFilter{}, 240)},
			{"account deliveries failed", listAccountDeliveries(ctx, rs, acc, domain.DeliveryFilter{Status: domain.DeliveryFailed}, 1)},
			{"account deliveries of one person", listAccountDeliveries(ctx, rs, acc, domain.DeliveryFilter{PersonID: seededPerson(acc, 7)}, 1)},
			// The tags screen's count of each tag's holders: its bits.
			{"tag holder counts", func() error {
				got, err := rs.TagHolderCounts(ctx, acc, tags)
				if err == nil && got[tags[0]] == 0 {
					err = fmt.Errorf("counts %v", got)
				}
				return err
			}},
			{"account counts", func() error {
				c, err := rs.AccountCounts(ctx, acc)
				if err == nil && (c.Persons != 3000 || c.Breadcrumbs != 6000 || c.Subscriptions != 2 || c.PendingDeliveries != 120) {
					err = fmt.Errorf("counts %+v", c)
				}
				return err
			}},
			{"attempt counts of a day", func() error {
				got, err := rs.AttemptCounts(ctx, acc, seedEpoch.Add(-23*time.Hour))
				if err == nil && len(got) != 48 {
					err = fmt.Errorf("%d rows, want 24 of each subscription", len(got))
				}
				return err
			}},
			// The webhook pipeline's reads of pending deliveries, which only
			// the partial indexes of migration 00190 serve.
			{"webhook backlog", func() error {
				b, err := rs.WebhookBacklog(ctx, until)
				if err == nil && (b.Pending != 360 || b.OldestDue == nil) {
					err = fmt.Errorf("backlog %+v, want 360 pending", b)
				}
				return err
			}},
			{"export, first chunk", exportPersons(ctx, rs, acc, domain.PersonExport{})},
			{"export, resumed deep", exportPersons(ctx, rs, acc, domain.PersonExport{After: seededPerson(acc, 2000)})},
			{"export, updated since", exportPersons(ctx, rs, acc, domain.PersonExport{UpdatedSince: &exportSince})},
			{"export, two tags", exportPersons(ctx, rs, acc, domain.PersonExport{TagIDs: tagged.TagIDs})},
			{"export, updated since and a tag", exportPersons(ctx, rs, acc, domain.PersonExport{UpdatedSince: &exportSince, TagIDs: tags[:1]})},
			{"key lookup", func() error {
				sum := sha256.Sum256([]byte(secret))
				_, err := rs.KeyByHash(ctx, sum[:])
				return err
			}},
			// Last: writes. Append Breadcrumb's statement (appendToHolder's,
			// on PostgreSQL) looks its person up as the reads above do.
			{"append a breadcrumb by external_id", func() error {
				_, _, err := rs.AppendBreadcrumb(ctx, acc, domain.BreadcrumbInput{Flavor: "web", ExternalID: new("ext-2000")},
					store.Write{Now: until, Window: time.Minute})
				return err
			}},
			{"redeliver the failed deliveries since", func() error {
				n, err := rs.RedeliverFailed(ctx, acc, hook, deliveriesSince, until)
				if err == nil && n == 0 {
					err = errors.New("redelivered nothing: the case writes nothing")
				}
				return err
			}},
			// The pipeline's writes that find deliveries by status or lease
			// (migration 00190's partial indexes).
			{"claim due deliveries", func() error {
				jobs, err := rs.ClaimDeliveriesFairly(ctx, until.Add(24*time.Hour), time.Minute, store.DeliveryClaim{Limit: 10})
				if err == nil && len(jobs) != 10 {
					err = fmt.Errorf("claimed %d, want 10", len(jobs))
				}
				return err
			}},
			{"rotate a secret", func() error {
				_, _, err := rs.RotateWebhookSecret(ctx, acc, hook, "whsec_rotated", until, until.Add(time.Hour))
				return err
			}},
			{"prune finished deliveries", func() error {
				n, err := rs.PruneDeliveries(ctx, until.Add(24*time.Hour), 100)
				if err == nil && n == 0 {
					err = errors.New("pruned nothing: the case deletes nothing")
				}
				return err
			}},
		}
		if rs.ReadsPersonsTogether() {
			cases = append(cases, struct {
				name string
				read func() error
			}{"get persons together", func() error {
				return rs.GetPersonsTogether(ctx, acc, []string{seededPerson(acc, 17), seededPerson(acc, 2999)})
			}})
		}
		for _, tc := range cases {
			checkPlans(t, rs, tc.name, tc.read)
		}
	})
}

// checkPlans runs read, explains every query it sends (explainPriced) and
// fails the test for each plan badPlanLine refuses.
func checkPlans(t *testing.T, rs rawStore, name string, read func() error) {
	t.Helper()
	var err error
	queries := rs.recordQueries(func() { err = read() })
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(queries) == 0 {
		t.Fatalf("%s: no query recorded", name)
	}
	// A read's planner settings (Dialect.MergeJoinTags, JoinsAsWritten)
	// hold for the statements after them in its transaction, and so for
	// their plans here.
	var hints []string
	for _, q := range queries {
		if strings.HasPrefix(q.query, "SELECT set_config(") {
			hints = append(hints, q.query)
			continue
		}
		plan := explainPriced(t, rs, q.query, q.args, hints...)
		if os.Getenv("PDS_SHOW_PLANS") != "" {
			t.Logf("%s:\n%s\n%s", name, q.query, strings.Join(plan, "\n"))
		}
		if bad := badPlanLine(q.query, plan); bad != "" {
			t.Errorf("%s: %q in the plan of\n%s\nplan:\n%s", name, bad, q.query, strings.Join(plan, "\n"))
		}
	}
}

func listPersons(ctx context.Context, rs rawStore, acc string, sel domain.PersonSelection, page int) func() error {
	return func() error {
		got, total, err := rs.ListPersons(ctx, acc, sel, domain.PageRequest{Page: page, Size: 25})
		if err == nil && (len(got) == 0 || total == 0) {
			err = fmt.Errorf("page %d is empty (total %d): the case reads nothing", page, total)
		}
		return err
	}
}

func exportPersons(ctx context.Context, rs rawStore, acc string, sel domain.PersonExport) func() error {
	return func() error {
		got, err := rs.ExportPersons(ctx, acc, sel, 1000)
		if err == nil && len(got) == 0 {
			err = fmt.Errorf("export %+v is empty: the case reads nothing", sel)
		}
		return err
	}
}

func listDeliveries(ctx context.Context, rs rawStore, acc, hook string, f domain.DeliveryFilter, page int) func() error {
	return func() error {
		got, total, err := rs.ListDeliveries(ctx, acc, hook, f, domain.PageRequest{Page: page, Size: 25})
		if err == nil && (len(got) == 0 || total == 0) {
			err = fmt.Errorf("page %d is empty (total %d): the case reads nothing", page, total)
		}
		return err
	}
}

func listAccountDeliveries(ctx context.Context, rs rawStore, acc string, f domain.DeliveryFilter, page int) func() error {
	return func() error {
		got, total, err := rs.ListAccountDeliveries(ctx, acc, f, domain.PageRequest{Page: page, Size: 25})
		if err == nil && (len(got) == 0 || total == 0) {
			err = fmt.Errorf("page %d is empty (total %d): the case reads nothing", page, total)
		}
		return err
	}
}

func listBreadcrumbs(ctx context.Context, rs rawStore, acc string, f domain.BreadcrumbFilter, page int) func() error {
	return func() error {
		got, total, err := rs.ListBreadcrumbs(ctx, acc, f, domain.PageRequest{Page: page, Size: 25})
		if err == nil && (len(got) == 0 || total == 0) {
			err = fmt.Errorf("page %d is empty (total %d): the case reads nothing", page, total)
		}
		return err
	}
}

// wholeRead matches a plan line that reads a whole table.
var wholeRead = regexp.MustCompile(`^SCAN (persons|breadcrumbs|person_tags|person_field_values|tags|custom_fields|timeline_counts|timeline_deltas|api_keys|deliveries|webhooks|webhook_attempt_counts|h|o|pt|t|f|v|p|d|w|ac)\b|Seq Scan`)

// accountWide matches a plan line that walks every row of an account in an
// index of a table that grows with the account (the catalogue's tags and
// fields are few, and read whole on purpose); the index is the submatch,
// or on PostgreSQL on the line before.
var (
	accountWide = regexp.MustCompile(`^SEARCH \w+ USING (?:COVERING )?INDEX (\w+) \(account_id=\?\)$|^Index Cond: \(account_id = '[^']*'::text\)$()`)
	usingIndex  = regexp.MustCompile(`using (\w+) on|Bitmap Index Scan on (\w+)`)
	growing     = regexp.MustCompile(`^(persons|person_tags|person_field_values|breadcrumbs|timeline|sqlite_autoindex_(persons|person_tags|person_field_values|breadcrumbs))`)
)

// tagRead matches a read of person_tags_seen (migration 00009), the tag
// filter's index, with its condition; or on PostgreSQL any index's
// condition, whose index is on the line before. The filter always bounds
// last_seen_at (the window's since); a read without that bound walks every
// holder of a tag. (So did the tags of a page and of a lookup, planned on
// a person_tags PostgreSQL had never analyzed: in a large account a page
// took far longer than person_tags_pkey takes to read them.)
var tagRead = regexp.MustCompile(`^SEARCH \w+ USING (?:COVERING )?INDEX person_tags_seen (\(.*\))$|^Index Cond: (.*)$`)

// listSort matches a sort of a list's rows, which an index must deliver in order.
var listSort = regexp.MustCompile(`USE TEMP B-TREE FOR ORDER BY|Sort Key: .*(last_seen_at|activity_at|p\.id\b|d\.created_at)`)

// ordersList reports whether a query reads a list in its order, and how
// many sorts of one page's rows (fetched by their ids) it may make.
func ordersList(query string) (bool, int) {
	lists := strings.Contains(query, "ORDER BY last_seen_at") || strings.Contains(query, "ORDER BY h.last_seen_at") ||
		strings.Contains(query, "ORDER BY activity_at") || strings.Contains(query, "ORDER BY p.account_id, p.id") ||
		strings.Contains(query, "ORDER BY d.created_at")
	return lists, strings.Count(query, " id IN (")
}

func badPlanLine(query string, plan []string) string {
	if bad := leaseNotByID(query, plan); bad != "" {
		return bad
	}
	lists, pageSorts := ordersList(query)
	index := ""
	subqueries := map[string]bool{} // a SCAN of one reads its rows as made, not a table
	for _, line := range plan {
		line = strings.TrimSpace(line)
		if name, ok := strings.CutPrefix(line, "CO-ROUTINE "); ok {
			subqueries[name] = true
		}
		if name, ok := strings.CutPrefix(line, "SCAN "); ok && subqueries[name] {
			continue
		}
		if m := usingIndex.FindStringSubmatch(line); m != nil {
			index = m[1] + m[2]
		}
		if m := wholeRead.FindString(line); m != "" {
			return m
		}
		if m := tagRead.FindStringSubmatch(line); m != nil && (m[1] != "" || index == "person_tags_seen") &&
			!strings.Contains(m[1]+m[2], "last_seen_at") {
			return m[0] + " (every holder of a tag)"
		}
		if m := accountWide.FindStringSubmatch(line); m != nil {
			if m[1] != "" {
				index = m[1]
			}
			if growing.MatchString(index) {
				return m[0] + " (" + index + ")"
			}
		}
		// A count over persons or breadcrumbs reads at most a second's
		// rows at either end of a window; the buckets count the rest. (The
		// tag filter counts the holders of a tag, through person_tags.)
		if strings.HasPrefix(query, "SELECT COUNT(*) FROM persons") || strings.HasPrefix(query, "SELECT COUNT(*) FROM breadcrumbs") {
			for _, column := range []string{"last_seen_at", "activity_at"} {
				if n := strings.Count(line, column); n == 1 && !strings.Contains(line, "Filter") {
					return "a count bounded on one side only: " + line
				}
			}
		}
		if m := listSort.FindString(line); m != "" && lists {
			if pageSorts == 0 {
				return m
			}
			pageSorts--
		}
	}
	return unindexedDeliveryFilter(query, plan)
}

// leaseNotByID refuses a claim's lease (ClaimDeliveriesFairly) whose
// UPDATE reads its rows other than through the primary key, one look-up a
// picked delivery (the pick, its subquery, reads deliveries as d). With
// the due condition checked again on its rows, both planners drove it from
// the due index instead and matched every due delivery against the pick,
// so that each claim of a backlog read the whole backlog.
func leaseNotByID(query string, plan []string) string {
	if !strings.HasPrefix(query, "UPDATE deliveries SET lease_until") {
		return ""
	}
	for _, line := range plan {
		if m := updatedRowsRead.FindString(strings.TrimSpace(line)); m != "" &&
			!strings.Contains(line, "sqlite_autoindex_deliveries_1 (id=?)") && !strings.Contains(line, "deliveries_pkey") {
			return m + " (a claim's lease not written by id)"
		}
	}
	return ""
}

// updatedRowsRead matches a read of the rows an UPDATE of deliveries
// writes: deliveries without an alias.
var updatedRowsRead = regexp.MustCompile(`^(?:SEARCH|SCAN) deliveries\b.*|.*Scan .* on deliveries  \(.*`)

// deliveryRead matches the condition of an index read of deliveries on
// SQLite, or of any index read on PostgreSQL.
var deliveryRead = regexp.MustCompile(`^SEARCH (?:d|deliveries) USING (?:COVERING )?INDEX \w+ \((.*)\)$|^Index Cond: (.*)$`)

// deliveryFilterTerm matches a condition of a delivery log's filter.
var deliveryFilterTerm = regexp.MustCompile(`(?:\bd\.|WHERE |AND )(status|event|person_id) = `)

// unindexedDeliveryFilter names the filters of a delivery log read when
// none of them is a condition, beside webhook_id, of the index it reads:
// each has an index that leads with it after webhook_id (migration 00110);
// without one the read walks the subscription's whole log, or every
// subscription's deliveries of that status. The worker's claim reads every
// subscription's pending deliveries by due time instead (deliveries_due,
// which holds only pending ones).
func unindexedDeliveryFilter(query string, plan []string) string {
	if !strings.Contains(query, "deliveries d ") && !strings.HasPrefix(query, "UPDATE deliveries") {
		return ""
	}
	var filters []string
	for _, m := range deliveryFilterTerm.FindAllStringSubmatch(query, -1) {
		if !slices.Contains(filters, m[1]) {
			filters = append(filters, m[1])
		}
	}
	if len(filters) == 0 {
		return ""
	}
	for _, line := range plan {
		m := deliveryRead.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil || !strings.Contains(m[1]+m[2], "webhook_id") && !strings.Contains(m[1]+m[2], "next_attempt_at") {
			continue
		}
		for _, column := range filters {
			if strings.Contains(m[1]+m[2], column) {
				return ""
			}
		}
	}
	return "a delivery log filtered on " + strings.Join(filters, ", ") + " read through an index of none of them"
}

// TestBadPlanLineTagReads holds the rule on person_tags_seen to plans seen:
// the tags of a page and of a lookup as PostgreSQL planned them on a
// person_tags it had never analyzed, and as it plans them with statistics.
func TestBadPlanLineTagReads(t *testing.T) {
	const tags = `SELECT pt.person_id, t.id, t.name FROM person_tags pt`
	for _, tc := range []struct {
		plan []string
		bad  bool
	}{
		{[]string{"->  Bitmap Heap Scan on person_tags pt", "Recheck Cond: ((account_id = 'acc_1'::text) AND (tag_id = t.id))",
			"->  Bitmap Index Scan on person_tags_seen", "Index Cond: ((account_id = 'acc_1'::text) AND (tag_id = t.id))"}, true},
		{[]string{"->  Index Scan using person_tags_seen on person_tags pt",
			"Index Cond: ((account_id = p.account_id) AND (tag_id = t.id) AND (person_id = p.id))"}, true},
		{[]string{"SEARCH pt USING INDEX person_tags_seen (account_id=? AND tag_id=?)"}, true},
		{[]string{"->  Index Scan using person_tags_pkey on person_tags pt", "Index Cond: (person_id = p.id)"}, false},
		{[]string{"->  Index Only Scan using person_tags_seen on person_tags h",
			"Index Cond: ((account_id = 'acc_1'::text) AND (tag_id = 'tag_1'::text) AND (last_seen_at >= '1795251600000'::bigint))"}, false},
		{[]string{"SEARCH person_tags USING COVERING INDEX person_tags_seen (account_id=? AND tag_id=? AND last_seen_at>?)"}, false},
	} {
		if bad := badPlanLine(tags, tc.plan) != ""; bad != tc.bad {
			t.Errorf("badPlanLine says %v, want %v, of\n%s", bad, tc.bad, strings.Join(tc.plan, "\n"))
		}
	}
}

// explainPriced explains query; on PostgreSQL with sequential scans (and
// for a list, sorts) priced out, on a connection of its own.
func explainPriced(t *testing.T, rs rawStore, query string, args []any, hints ...string) []string {
	t.Helper()
	if rs.Engine() == "sqlite" {
		return explain(t, rs, query, args)
	}
	ctx := context.Background()
	conn, err := rs.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	settings := []string{`SET enable_seqscan = off`}
	// A small table's list is cheaper sorted than read in index order; at
	// the size that matters it is not. A page's own rows may be sorted.
	if lists, pageSorts := ordersList(query); lists && pageSorts == 0 {
		settings = append(settings, `SET enable_sort = off`)
	}
	// The hints set their values for the transaction only (set_config's
	// is_local), as in the read that sent them.
	settings = append([]string{`BEGIN`}, append(settings, hints...)...)
	for _, set := range settings {
		if _, err := conn.ExecContext(ctx, set); err != nil {
			t.Fatal(err)
		}
	}
	defer conn.ExecContext(ctx, `RESET ALL`) //nolint:errcheck // the connection is the test's own
	defer conn.ExecContext(ctx, `ROLLBACK`)  //nolint:errcheck // the explain changed nothing
	rows, err := conn.QueryContext(ctx, "EXPLAIN "+query, args...)
	if err != nil {
		t.Fatalf("explain %s: %v", query, err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, line)
	}
	return plan
}
