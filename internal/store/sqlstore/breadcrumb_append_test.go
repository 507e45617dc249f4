package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/testenv"
)

// TestAppendBreadcrumbRoundTrips holds a breadcrumb for the holder of its
// one identifier, on PostgreSQL, to one statement and no transaction
// (appendToHolder), leaving what the transaction leaves: the breadcrumb,
// and the person seen at the write's time. Every other breadcrumb keeps the
// transaction: one whose identifier nobody holds (it creates the person),
// one with two identifiers, one with a person_id.
func TestAppendBreadcrumbRoundTrips(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rs := openCounting(t, eng)
		acc, _ := rs.seedAccount(t, 3)
		other, _ := rs.seedAccount(t, 3)
		ctx := context.Background()
		at := seedEpoch.Add(time.Hour)
		occurred := seedEpoch.Add(-time.Hour)
		for _, tc := range []struct {
			name    string
			in      domain.BreadcrumbInput
			person  string // "" for a person the append creates
			oneTrip bool   // on PostgreSQL
		}{
			{name: "by external_id", in: domain.BreadcrumbInput{Flavor: "web", ExternalID: new("ext-1")}, person: seededPerson(acc, 1), oneTrip: true},
			{name: "by email, any case, occurred earlier", in: domain.BreadcrumbInput{Flavor: "mail", Email: new("P2@Seed.TEST"), OccurredAt: &occurred},
				person: seededPerson(acc, 2), oneTrip: true},
			{name: "by an external_id nobody holds", in: domain.BreadcrumbInput{Flavor: "web", ExternalID: new("ext-new")}},
			{name: "by two identifiers", in: domain.BreadcrumbInput{Flavor: "web", ExternalID: new("ext-0"), Email: new("p1@seed.test")}, person: seededPerson(acc, 0)},
			{name: "by person_id", in: domain.BreadcrumbInput{Flavor: "web", PersonID: new(seededPerson(acc, 0))}, person: seededPerson(acc, 0)},
		} {
			at = at.Add(time.Minute)
			var (
				b   domain.Breadcrumb
				err error
			)
			// NoSuppressions: as the API writes for a key whose account
			// suppresses nothing.
			n, tx := rs.countRoundTrips(func() {
				b, _, err = rs.AppendBreadcrumb(ctx, acc, tc.in, store.Write{Now: at, Window: time.Minute, NoSuppressions: true})
			})
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if (tc.person != "" && b.PersonID != tc.person) || (tc.person == "" && b.PersonID == "") || !b.CreatedAt.Equal(at) {
				t.Fatalf("%s: appended %+v", tc.name, b)
			}
			wantActivity := at
			if tc.in.OccurredAt != nil {
				wantActivity = *tc.in.OccurredAt
			}
			got, _, err := rs.ListBreadcrumbs(ctx, acc, domain.BreadcrumbFilter{PersonID: &b.PersonID}, domain.PageRequest{Page: 1, Size: 25})
			if err != nil || len(got) == 0 || got[0].ID != b.ID || got[0].Flavor != tc.in.Flavor || !got[0].ActivityAt.Equal(wantActivity) {
				t.Fatalf("%s: the person's breadcrumbs %+v (%v), want %+v first", tc.name, got, err, b)
			}
			p, err := rs.GetPerson(ctx, acc, b.PersonID)
			if err != nil || !p.DateLastSeen.Equal(at) {
				t.Fatalf("%s: person %+v (%v), want seen at %s", tc.name, p, err, at)
			}
			if eng.Name == "postgres" && tc.oneTrip && (n != 1 || tx != 0) {
				t.Errorf("%s: %d statements in %d transactions, want 1 in none", tc.name, n, tx)
			}
			if tc.person == "" {
				if b, err := rs.PendingBurst(ctx, acc, b.PersonID); err != nil || b.Event != domain.EventPersonCreated {
					t.Fatalf("%s: outbox row of the created person %+v (%v)", tc.name, b, err)
				}
			}
		}

		// Another account holds the same external_id: the append goes to
		// this account's holder and leaves that one be.
		before, err := rs.GetPerson(ctx, other, seededPerson(other, 1))
		if err != nil {
			t.Fatal(err)
		}
		b, _, err := rs.AppendBreadcrumb(ctx, acc, domain.BreadcrumbInput{Flavor: "web", ExternalID: new("ext-1")}, store.Write{Now: at.Add(time.Minute), Window: time.Minute})
		if err != nil || b.PersonID != seededPerson(acc, 1) {
			t.Fatalf("append in its own account: %+v (%v)", b, err)
		}
		if after, err := rs.GetPerson(ctx, other, seededPerson(other, 1)); err != nil || !after.DateLastSeen.Equal(before.DateLastSeen) {
			t.Fatalf("the other account's person moved: %+v (%v)", after, err)
		}
	})
}
