package sqlstore_test

import (
	"context"
	"slices"
	"testing"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/testenv"
)

// TestMissingSecretReadOncePerTransaction: within one SQLite transaction
// (one snapshot, the one write lock) an account found without a
// suppression secret stays so until the transaction makes one, so the
// creates of a group commit read it once; the secret the transaction then
// makes is found. PostgreSQL, whose statements each see the commits before
// them, reads it every time.
func TestMissingSecretReadOncePerTransaction(t *testing.T) {
	for _, eng := range testenv.Engines {
		t.Run(eng.Name, func(t *testing.T) {
			t.Parallel()
			rs := openCounting(t, eng)
			ctx := context.Background()
			acc := domain.NewID("acc")
			if err := rs.CreateAccount(ctx, domain.Account{ID: acc, Name: "secret", CreatedAt: seedEpoch}); err != nil {
				t.Fatal(err)
			}
			v := domain.SuppressedValues(nil, nil, nil, new("+15550100"))[0]
			found, ran, err := rs.ReadSecretsInTx(ctx, acc, v, []bool{false, false, true, false}, rs.statements.Load)
			if err != nil {
				t.Fatal(err)
			}
			if want := []bool{false, false, true, true}; !slices.Equal(found, want) {
				t.Fatalf("secret found at each read: %v, want %v", found, want)
			}
			again := ran[1]
			if eng.Name == "sqlite" && again != 0 {
				t.Fatalf("the second read of a missing secret ran %d statements, want none", again)
			}
			if eng.Name == "postgres" && again != 1 {
				t.Fatalf("the second read of a missing secret ran %d statements, want 1", again)
			}
		})
	}
}
