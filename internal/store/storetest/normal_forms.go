package storetest

import (
	"context"
	"database/sql"
	"testing"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// IdentifiersNormalizedAtRest holds an engine to migration 00210 (a Go
// migration, sqlstore.NormalIdentifiersMigration): identifiers an earlier
// version stored in another form (db is a connection of the test's own to
// st's database, which writes them as that version did) are rewritten to
// their normal form when rerun applies it again, and then match as any
// other; a value the normal form refuses, or whose normal form another
// person of the account holds, is left as it was. Breadcrumbs' identifiers
// go the same way.
func IdentifiersNormalizedAtRest(t *testing.T, st store.Store, db *sql.DB, rerun func() error) {
	t.Helper()
	ctx := context.Background()
	acc := NewAccount(t, st)
	w := store.Write{Now: Epoch, Window: personWindow}
	made := map[string]string{}
	for _, name := range []string{"kelvin", "mixed", "refused", "taken", "holder"} {
		p, _, err := st.UpsertPerson(ctx, acc, domain.PersonUpsert{ExternalID: setText("seed-" + name)}, w)
		if err != nil {
			t.Fatal(err)
		}
		made[name] = p.ID
	}
	// As an earlier version stored them: the email as sent beside its
	// lower-cased copy, the other identifiers as sent.
	for _, row := range []struct {
		name                              string
		email, emailNorm, externalID, fID any
		phone                             any
	}{
		{"kelvin", "\u212Aate@Example.org", "kate@example.org", "crm-\uff11", nil, "\uff0b44 20"},
		{"mixed", "Zoe@Example.ORG", "zoe@example.org", "Crm-Z", "F-z", "+44 (20) 7946"},
		{"refused", "erase.me@example.org\u200b", "erase.me@example.org\u200b", "erase-me-ext ", nil, nil},
		{"taken", nil, nil, "crm-\uff12", nil, nil},
		{"holder", nil, nil, "crm-2", nil, nil},
	} {
		if _, err := db.ExecContext(ctx, `UPDATE persons SET email = $1, email_norm = $2, external_id = $3, f_id = $4, phone = $5
			WHERE id = $6`, row.email, row.emailNorm, row.externalID, row.fID, row.phone, made[row.name]); err != nil {
			t.Fatal(err)
		}
	}
	crumb, _, err := st.AppendBreadcrumb(ctx, acc, domain.BreadcrumbInput{Flavor: "page_view", PersonID: ptr(made["mixed"])}, w)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `UPDATE breadcrumbs SET email = $1, external_id = $2 WHERE id = $3`,
		"Zoe@Example.ORG", "Crm-\uff3a", crumb.ID); err != nil {
		t.Fatal(err)
	}

	if err := rerun(); err != nil {
		t.Fatal(err)
	}
	const none = "<nil>" // textOf of an absent value
	for _, want := range []struct {
		name                          string
		email, externalID, fID, phone string
	}{
		{"kelvin", "kate@example.org", "crm-1", none, "+44 20"},
		{"mixed", "zoe@example.org", "Crm-Z", "F-z", "+44 (20) 7946"},
		{"refused", "erase.me@example.org\u200b", "erase-me-ext ", none, none},
		{"taken", none, "crm-\uff12", none, none},
		{"holder", none, "crm-2", none, none},
	} {
		p, err := st.GetPerson(ctx, acc, made[want.name])
		if err != nil {
			t.Fatal(err)
		}
		if got := [4]string{textOf(p.Email), textOf(p.ExternalID), textOf(p.FID), textOf(p.Phone)}; got != [4]string{want.email, want.externalID, want.fID, want.phone} {
			t.Errorf("%s after the migration: %q, want %q", want.name, got, [4]string{want.email, want.externalID, want.fID, want.phone})
		}
	}
	// Matched in the normal form, as any person.
	p, created, err := st.UpsertPerson(ctx, acc, domain.PersonUpsert{Email: setText("\u212Aate@example.org")}, w)
	if err != nil || created || p.ID != made["kelvin"] {
		t.Fatalf("the Kelvin-sign email after the migration: %v (created %v), want %s", err, created, made["kelvin"])
	}
	list, _, err := st.ListBreadcrumbs(ctx, acc, domain.BreadcrumbFilter{PersonID: ptr(made["mixed"])}, domain.PageRequest{Page: 1, Size: 1})
	if err != nil || len(list) != 1 || textOf(list[0].Email) != "zoe@example.org" || textOf(list[0].ExternalID) != "Crm-Z" {
		t.Fatalf("the breadcrumb after the migration: %+v, %v", list, err)
	}
}

func ptr(s string) *string { return &s }
