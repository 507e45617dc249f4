package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/store/sqlstore"
	"github.com/pds-dev/pds/internal/testenv"
)

// TestErasureFinishedAfterACrash stops an SQLite erasure after its first
// chunk of breadcrumbs, as a crash would, and opens the database again:
// the store finishes the erasure before serving, so the person ends erased
// (identifiers free, counts exact, the record written), never half.
func TestErasureFinishedAfterACrash(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	eng := testenv.SQLite
	database := eng.NewDatabase(t)
	st := eng.Open(t, database)
	acc := domain.NewID("acc")
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	if err := st.CreateAccount(ctx, domain.Account{ID: acc, Name: "crash", CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	w := store.Write{Now: now, Window: time.Minute}
	p, _, err := st.UpsertPerson(ctx, acc, domain.PersonUpsert{Email: set("crash@example.com")}, w)
	if err != nil {
		t.Fatal(err)
	}
	kept, _, err := st.UpsertPerson(ctx, acc, domain.PersonUpsert{Email: set("kept@example.com")}, w)
	if err != nil {
		t.Fatal(err)
	}
	raw := eng.Raw(t, database)
	const crumbs = 1500 // more than one chunk (sqlite.Dialect.EraseChunk)
	for from := 0; from < crumbs; from += 100 {
		var b strings.Builder
		args := []any{acc, p.ID}
		b.WriteString(`INSERT INTO breadcrumbs (id, account_id, flavor, person_id, activity_at, created_at) VALUES `)
		for i := from; i < from+100; i++ {
			if i > from {
				b.WriteString(", ")
			}
			args = append(args, fmt.Sprintf("bc_crash%05d", i), now.UnixMilli()+int64(i))
			fmt.Fprintf(&b, "($%d, $1, 'page_view', $2, $%d, $%d)", len(args)-1, len(args), len(args))
		}
		if _, err := raw.Exec(b.String(), args...); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := st.AppendBreadcrumb(ctx, acc, domain.BreadcrumbInput{Flavor: "click", PersonID: &kept.ID}, w); err != nil {
		t.Fatal(err)
	}

	done, err := st.(*sqlstore.Store).EraseOnePart(ctx, acc, p.ID, domain.EraseRequest{Suppress: true, KeyID: "key_crash"}, now)
	if err != nil || done {
		t.Fatalf("first chunk: done %v, %v", done, err)
	}
	var left int
	if err := raw.QueryRow(`SELECT COUNT(*) FROM erasure_purges`).Scan(&left); err != nil || left != 1 {
		t.Fatalf("purge rows after the first chunk: %d, %v", left, err)
	}
	st.Close() // the crash

	st = eng.Open(t, database)
	if _, err := st.GetPerson(ctx, acc, p.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("after the restart: %v", err)
	}
	counts, err := st.AccountCounts(ctx, acc)
	if err != nil || counts.Persons != 1 || counts.Breadcrumbs != 1 {
		t.Fatalf("counts after the restart: %+v, %v", counts, err)
	}
	list, total, err := st.ListErasures(ctx, acc, domain.PageRequest{Page: 1, Size: 10})
	if err != nil || total != 1 || list[0].PersonID != p.ID || !list[0].Suppressed || list[0].KeyID != "key_crash" {
		t.Fatalf("erasures after the restart: %+v, %v", list, err)
	}
	if _, _, err := st.UpsertPerson(ctx, acc, domain.PersonUpsert{Email: set("crash@example.com")}, w); !errors.As(err, new(*domain.SuppressedError)) {
		t.Fatalf("the suppression the crashed erasure asked for: %v", err)
	}
	if err := raw.QueryRow(`SELECT COUNT(*) FROM erasure_purges`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("purge rows after the restart: %d, %v", left, err)
	}
}
