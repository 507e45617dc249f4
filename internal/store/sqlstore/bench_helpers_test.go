package sqlstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// benchAccount creates an account of the benchmark's own in st.
func benchAccount(b *testing.B, st store.Store) string {
	b.Helper()
	acc := domain.NewID("acc")
	if err := st.CreateAccount(context.Background(), domain.Account{ID: acc, Name: "bench", CreatedAt: seedEpoch}); err != nil {
		b.Fatal(err)
	}
	return acc
}

// newPersons is a batch of size new persons, as POST /persons/batch
// receives them, numbered by next.
func newPersons(size int, next func() int64) []domain.PersonUpsert {
	text := func(s string) domain.Opt[string] { return domain.Opt[string]{Set: true, Value: s} }
	items := make([]domain.PersonUpsert, size)
	for i := range items {
		k := next()
		items[i] = domain.PersonUpsert{ExternalID: text(fmt.Sprintf("b-%d", k)), Email: text(fmt.Sprintf("b-%d@x.test", k)),
			FirstName: text("First"), LastName: text("Last"), Phone: text("+1555")}
	}
	return items
}
