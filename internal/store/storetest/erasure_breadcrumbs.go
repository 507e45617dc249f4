package storetest

import (
	"context"
	"strings"
	"testing"

	"github.com/pds-dev/pds/internal/domain"
)

// testErasureClearsNamedIdentifiers: breadcrumbs another person holds may
// name the erased person's identifiers (a breadcrumb matched to Q by Q's
// external_id that also carried P's email, one given Q's id that carried
// P's f_id). Erasing P, with or without suppression, clears P's
// identifiers from every breadcrumb that names them, whoever holds it;
// the breadcrumbs stay Q's, with Q's own identifiers, in the list and in
// an access report. Another account's breadcrumbs naming the same values
// are its own and stay.
func testErasureClearsNamedIdentifiers(t *testing.T, newStore NewStore) {
	ctx := context.Background()
	st := newStore(t)
	for _, suppress := range []bool{true, false} {
		c := newPersonCase(t, st)
		other := c.other()
		p, _ := c.upsert(domain.PersonUpsert{Email: setText("p@named.test"), ExternalID: setText("p-ext"), FID: setText("p-fid")})
		q, _ := c.upsert(domain.PersonUpsert{ExternalID: setText("q-ext")})
		text := func(s string) *string { return &s }
		for _, in := range []domain.BreadcrumbInput{
			{Flavor: "page_view", ExternalID: text("q-ext"), Email: text("p@named.test")},
			{Flavor: "page_view", PersonID: &q.ID, FID: text("p-fid"), Email: text("P@Named.test")},
			{Flavor: "page_view", PersonID: &q.ID, ExternalID: text("p-ext")},
			{Flavor: "page_view", ExternalID: text("q-ext")},
		} {
			if _, _, err := st.AppendBreadcrumb(ctx, c.acc, in, c.write()); err != nil {
				t.Fatalf("append %+v: %v", in, err)
			}
		}
		theirs, _ := other.upsert(domain.PersonUpsert{ExternalID: setText("theirs")})
		if _, _, err := st.AppendBreadcrumb(ctx, other.acc, domain.BreadcrumbInput{Flavor: "page_view", PersonID: &theirs.ID,
			Email: text("p@named.test")}, other.write()); err != nil {
			t.Fatal(err)
		}

		if _, err := st.ErasePerson(ctx, c.acc, p.ID, domain.EraseRequest{Suppress: suppress, KeyID: "key_eraser"}, c.write()); err != nil {
			t.Fatal(err)
		}
		named := func(b domain.Breadcrumb) bool {
			for _, v := range []*string{b.Email, b.ExternalID, b.FID} {
				if v != nil && (strings.EqualFold(*v, "p@named.test") || *v == "p-ext" || *v == "p-fid") {
					return true
				}
			}
			return false
		}
		list, total, err := st.ListBreadcrumbs(ctx, c.acc, domain.BreadcrumbFilter{PersonID: &q.ID}, domain.PageRequest{Page: 1, Size: 10})
		if err != nil || total != 4 {
			t.Fatalf("suppress=%v: Q's breadcrumbs after the erasure: %d, %v", suppress, total, err)
		}
		report, err := st.ReportBreadcrumbs(ctx, c.acc, q.ID, nil, 10)
		if err != nil || len(report) != 4 {
			t.Fatalf("suppress=%v: Q's report: %d breadcrumbs, %v", suppress, len(report), err)
		}
		for _, b := range append(list, report...) {
			if named(b) {
				t.Errorf("suppress=%v: Q's breadcrumb %s still names the erased person: email %v, external_id %v, f_id %v",
					suppress, b.ID, deref(b.Email), deref(b.ExternalID), deref(b.FID))
			}
		}
		kept := 0
		for _, b := range list {
			if b.ExternalID != nil && *b.ExternalID == "q-ext" {
				kept++
			}
		}
		if kept != 2 {
			t.Errorf("suppress=%v: %d of Q's breadcrumbs keep Q's external_id, want 2", suppress, kept)
		}
		mine, _, err := st.ListBreadcrumbs(ctx, other.acc, domain.BreadcrumbFilter{PersonID: &theirs.ID}, domain.PageRequest{Page: 1, Size: 10})
		if err != nil || len(mine) != 1 || mine[0].Email == nil {
			t.Fatalf("suppress=%v: another account's breadcrumb: %+v, %v", suppress, mine, err)
		}
	}
}
