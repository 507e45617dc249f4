package sqlstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/testenv"
)

// TestPersonReportPlans explains every statement of an access request's
// reads (pds persons report) with the rules of TestHotQueryPlans: no read
// of a whole table or a whole account, no sort of a page's rows. A person
// with thousands of breadcrumbs among an account's others is read a keyset
// page at a time, from its first page and from deep inside, and so are the
// deliveries that carried it among a subscription's log.
func TestPersonReportPlans(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rs := openCounting(t, eng)
		rs.StopFolding()
		ctx := context.Background()
		acc, _ := rs.seedAccount(t, 2000)
		other, _ := rs.seedAccount(t, 200)
		person := seededPerson(acc, 7)
		// The person's 3,000 breadcrumbs, three a millisecond, among as many
		// of the account's others and of another account.
		var crumbs [][]any
		for i := range 9000 {
			owner, who := acc, person
			switch i % 3 {
			case 1:
				who = seededPerson(acc, 100+i%1000)
			case 2:
				owner, who = other, seededPerson(other, i%200)
			}
			crumbs = append(crumbs, []any{fmt.Sprintf("bc_%06d", i), owner, "web", who, seedEpoch.UnixMilli() + int64(i/9), seedEpoch.UnixMilli()})
		}
		rs.insertRows(t, "breadcrumbs", "id, account_id, flavor, person_id, activity_at, created_at", crumbs)
		hook := rs.seedDeliveries(t, acc, 3000)
		rs.seedDeliveries(t, acc, 3000)
		rs.seedDeliveries(t, other, 3000)
		var attempts [][]any
		for i := range 3000 {
			attempts = append(attempts, []any{fmt.Sprintf("%s%08d", hook[len(hook)-24:], i), 1, seedEpoch.UnixMilli(), 200, 3})
		}
		rs.insertRows(t, "delivery_attempts", "delivery_id, attempt, attempted_at, status_code, duration_ms", attempts)
		if eng.Name == "postgres" {
			rs.analyze(t)
		}
		first, err := rs.ReportBreadcrumbs(ctx, acc, person, nil, 1000)
		if err != nil || len(first) != 1000 {
			t.Fatalf("first page: %d, %v", len(first), err)
		}
		deep := &store.BreadcrumbKey{ActivityAt: first[999].ActivityAt, ID: first[999].ID}
		deliveries, err := rs.ReportDeliveries(ctx, acc, person, nil, 4)
		if err != nil || len(deliveries) != 4 {
			t.Fatalf("first deliveries: %d, %v", len(deliveries), err)
		}
		last := deliveries[3].Delivery
		resumed := &store.DeliveryKey{WebhookID: last.WebhookID, CreatedAt: last.CreatedAt, ID: last.ID}
		for _, tc := range []struct {
			name string
			read func() error
		}{
			{"the person's record", func() error {
				rec, err := rs.PersonRecord(ctx, acc, person)
				if err == nil && (len(rec.Tags) != 3 || len(rec.Values) != 3) {
					err = fmt.Errorf("record %+v", rec)
				}
				return err
			}},
			{"breadcrumbs, first page", func() error {
				_, err := rs.ReportBreadcrumbs(ctx, acc, person, nil, 1000)
				return err
			}},
			{"breadcrumbs, a deep page", func() error {
				page, err := rs.ReportBreadcrumbs(ctx, acc, person, deep, 1000)
				if err == nil && (len(page) != 1000 || page[0].ID <= deep.ID && page[0].ActivityAt.Equal(deep.ActivityAt)) {
					err = fmt.Errorf("deep page of %d from %s", len(page), page[0].ID)
				}
				return err
			}},
			{"deliveries, first page", func() error {
				_, err := rs.ReportDeliveries(ctx, acc, person, nil, 100)
				return err
			}},
			{"deliveries, resumed", func() error {
				page, err := rs.ReportDeliveries(ctx, acc, person, resumed, 100)
				if err == nil && len(page) != 2 {
					err = fmt.Errorf("resumed page of %d, want the last 2 of 6", len(page))
				}
				return err
			}},
		} {
			checkPlans(t, rs, tc.name, tc.read)
		}
	})
}
