package sqlstore_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/testenv"
)

// TestAWriteUpdatesItsPersonOnce holds every write to one UPDATE of the
// person's row: a patch's attributes go with its stamps (recordChange), since
// on PostgreSQL each UPDATE writes a row version and an entry in every index
// of persons. Each write must still leave what it wrote, stamped.
func TestAWriteUpdatesItsPersonOnce(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rs := openCounting(t, eng)
		acc, _ := rs.seedAccount(t, 3)
		ids := []string{seededPerson(acc, 0), seededPerson(acc, 1), seededPerson(acc, 2)}
		ctx := context.Background()
		field := func(v string) domain.Opt[map[string]json.RawMessage] {
			return domain.Opt[map[string]json.RawMessage]{Set: true, Value: map[string]json.RawMessage{"field_4": json.RawMessage(v)}}
		}
		at := seedEpoch.Add(time.Hour)
		for _, tc := range []struct {
			name       string
			write      func(w store.Write) error
			id         string
			result     string
			moved      bool // date_last_seen moves to the write's time
			wantFirst  string
			wantLast   *string
			wantValue  string
			wantChange bool
		}{
			{name: "an upsert that changes an attribute", id: ids[0], result: domain.UpsertUpdated, moved: true,
				write: func(w store.Write) error {
					_, _, err := rs.UpsertPerson(ctx, acc, domain.PersonUpsert{ExternalID: set("ext-0"), FirstName: set("Ada")}, w)
					return err
				}, wantFirst: "Ada", wantChange: true},
			{name: "an upsert that changes nothing", id: ids[0], result: domain.UpsertUnchanged,
				write: func(w store.Write) error {
					_, _, err := rs.UpsertPerson(ctx, acc, domain.PersonUpsert{ExternalID: set("ext-0"), FirstName: set("Ada")}, w)
					return err
				}, wantFirst: "Ada"},
			{name: "an upsert that changes a custom field value only", id: ids[1], result: domain.UpsertUpdated, moved: true,
				write: func(w store.Write) error {
					_, _, err := rs.UpsertPerson(ctx, acc, domain.PersonUpsert{ExternalID: set("ext-1"), CustomFields: field(`"red"`)}, w)
					return err
				}, wantFirst: "Seed", wantValue: "red", wantChange: true},
			{name: "a PATCH of an attribute and a value", id: ids[2], result: domain.UpsertUpdated, moved: true,
				write: func(w store.Write) error {
					_, err := rs.UpdatePerson(ctx, acc, ids[2], domain.PersonUpdate{LastName: set("Lovelace"), CustomFields: field(`"green"`)}, w)
					return err
				}, wantFirst: "Seed", wantLast: new("Lovelace"), wantValue: "green", wantChange: true},
		} {
			at = at.Add(time.Minute)
			w := store.Write{Now: at, Window: time.Minute}
			before, err := rs.GetPerson(ctx, acc, tc.id)
			if err != nil {
				t.Fatal(err)
			}
			var werr error
			if n := rs.countPersonUpdates(func() { werr = tc.write(w) }); werr != nil || n != 1 {
				t.Fatalf("%s: %d UPDATEs of persons (%v), want 1", tc.name, n, werr)
			}
			p, err := rs.GetPerson(ctx, acc, tc.id)
			if err != nil {
				t.Fatal(err)
			}
			wantSeen := before.DateLastSeen
			if tc.moved {
				wantSeen = domain.FromMillis(at.UnixMilli())
			}
			if p.UpsertResult != tc.result || !p.DateLastSeen.Equal(wantSeen) || p.FirstName == nil || *p.FirstName != tc.wantFirst ||
				(tc.wantLast != nil && (p.LastName == nil || *p.LastName != *tc.wantLast)) ||
				(tc.wantValue != "" && p.CustomFields["field_4"] != tc.wantValue) || *p.ExternalID != *before.ExternalID || *p.Email != *before.Email {
				t.Fatalf("%s left %+v", tc.name, p)
			}
			b, err := rs.PendingBurst(ctx, acc, tc.id)
			if tc.wantChange && (err != nil || !b.LastChangeAt.Equal(at)) {
				t.Fatalf("%s: outbox row %+v (%v), want a change at %s", tc.name, b, err, at)
			}
		}
	})
}
