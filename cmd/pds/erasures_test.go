package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/testenv"
)

func TestErasuresList(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		ctx := context.Background()
		db := eng.NewDatabase(t)
		var acc struct{ ID string }
		pdsJSON(t, &acc, "accounts", "create", "--name", "acme", "--database", db)
		if out, err := pds(t, "erasures", "list", "--account", acc.ID, "--database", db); err != nil ||
			!strings.Contains(out, "No person of this account was erased.") {
			t.Fatalf("an account without erasures: %v %s", err, out)
		}

		st := eng.Open(t, db)
		at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
		w := store.Write{Now: at, Window: time.Minute}
		var erased []string
		for i, suppress := range []bool{false, true} {
			p, _, err := st.UpsertPerson(ctx, acc.ID, domain.PersonUpsert{Email: domain.Opt[string]{Set: true, Value: "gone" + string(rune('a'+i)) + "@example.com"}}, w)
			if err != nil {
				t.Fatal(err)
			}
			w.Now = w.Now.Add(time.Minute)
			if _, err := st.ErasePerson(ctx, acc.ID, p.ID, domain.EraseRequest{Suppress: suppress, KeyID: "key_eraser"}, w); err != nil {
				t.Fatal(err)
			}
			erased = append(erased, p.ID)
		}

		var list struct {
			Erasures []struct {
				ID         string `json:"id"`
				ErasedAt   string `json:"erased_at"`
				KeyID      string `json:"key_id"`
				PersonID   string `json:"person_id"`
				Suppressed bool   `json:"suppressed"`
			}
		}
		pdsJSON(t, &list, "erasures", "list", "--account", acc.ID, "--database", db)
		if len(list.Erasures) != 2 || list.Erasures[0].PersonID != erased[1] || !list.Erasures[0].Suppressed ||
			list.Erasures[1].PersonID != erased[0] || list.Erasures[1].Suppressed || list.Erasures[0].KeyID != "key_eraser" ||
			list.Erasures[0].ErasedAt != "2026-11-21T10:02:00.000Z" {
			t.Fatalf("erasures list: %+v", list)
		}
		out, err := pds(t, "erasures", "list", "--account", acc.ID, "--database", db)
		if err != nil || !strings.Contains(out, erased[0]) || !strings.Contains(out, "2026-11-21T10:02:00Z") || strings.Contains(out, "gone") {
			t.Fatalf("erasures list: %v\n%s", err, out)
		}
		for _, bad := range [][]string{
			{"erasures", "list"},
			{"erasures", "list", "--account", "acc_missing"},
			{"erasures"},
			{"erasures", "show"},
		} {
			if out, err := pds(t, append(bad, "--database", db)...); err == nil {
				t.Errorf("pds %v succeeded: %s", bad, out)
			}
		}
	})
}
