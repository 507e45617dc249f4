package storetest

import (
	"context"
	"testing"

	"github.com/pds-dev/pds/internal/domain"
)

// testDeliveredStates: the states changes compares with are kept per
// account and person, replaced by a later keep, never written for a person
// that does not exist, and go with an erased person.
func testDeliveredStates(t *testing.T, newStore NewStore) {
	ctx := context.Background()
	c := newPersonCase(t, newStore(t))
	st := c.st
	other := c.other()
	email := func(v string) *string { return &v }
	a, _ := c.upsert(domain.PersonUpsert{ExternalID: domain.Opt[string]{Set: true, Value: "a"}})
	b, _ := c.upsert(domain.PersonUpsert{ExternalID: domain.Opt[string]{Set: true, Value: "b"}})
	first := domain.TrackedMembers{Email: email("a@example.com"), TagIDs: []string{"tag_2", "tag_1"}, CustomFields: map[string]string{"plan": "gold"}}
	if err := st.KeepDeliveredStates(ctx, c.acc, map[string]domain.TrackedMembers{a.ID: first, b.ID: {}, "per_gone": first}); err != nil {
		t.Fatal(err)
	}
	got, err := st.DeliveredStates(ctx, c.acc, []string{a.ID, b.ID, "per_gone"})
	if err != nil || len(got) != 2 || *got[a.ID].Email != "a@example.com" || got[a.ID].TagIDs[0] != "tag_1" || got[a.ID].CustomFields["plan"] != "gold" {
		t.Fatalf("kept %+v, %v", got, err)
	}
	if foreign, err := st.DeliveredStates(ctx, other.acc, []string{a.ID}); err != nil || len(foreign) != 0 {
		t.Fatalf("another account reads %+v, %v", foreign, err)
	}
	if err := st.KeepDeliveredStates(ctx, other.acc, map[string]domain.TrackedMembers{a.ID: {}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.DeliveredStates(ctx, c.acc, []string{a.ID}); got[a.ID].Email == nil {
		t.Fatal("another account's keep replaced this account's state")
	}
	second := domain.TrackedMembers{Email: email("a@lovelace.name")}
	if err := st.KeepDeliveredStates(ctx, c.acc, map[string]domain.TrackedMembers{a.ID: second}); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.DeliveredStates(ctx, c.acc, []string{a.ID}); *got[a.ID].Email != "a@lovelace.name" || got[a.ID].TagIDs != nil {
		t.Fatalf("after a second keep: %+v", got[a.ID])
	}
	if _, err := st.ErasePerson(ctx, c.acc, a.ID, domain.EraseRequest{KeyID: "k"}, c.write()); err != nil {
		t.Fatal(err)
	}
	if got, err := st.DeliveredStates(ctx, c.acc, []string{a.ID, b.ID}); err != nil || len(got) != 1 {
		t.Fatalf("after the erasure: %+v, %v", got, err)
	}
	if err := st.KeepDeliveredStates(ctx, c.acc, map[string]domain.TrackedMembers{a.ID: first}); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.DeliveredStates(ctx, c.acc, []string{a.ID}); len(got) != 0 {
		t.Fatal("a state was kept for an erased person")
	}
}
