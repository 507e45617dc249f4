package ratelimit_test

import (
	"testing"

	"github.com/pds-dev/pds/internal/ratelimit"
	"github.com/pds-dev/pds/internal/testenv"
)

// TestForAsksTheStore: the store says whether its instances share budgets
// (PostgreSQL: any number of them; SQLite: one), and For follows it, so
// no caller names an engine.
func TestForAsksTheStore(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		st := eng.NewStore(t)
		lim := ratelimit.For(st)
		_, shared := lim.(*ratelimit.Shared)
		_, memory := lim.(*ratelimit.Memory)
		if shared != st.SharesBudgets() || memory == st.SharesBudgets() {
			t.Fatalf("%s: limiter %T, the store shares budgets: %v", eng.Name, lim, st.SharesBudgets())
		}
		if want := eng.Name == "postgres"; st.SharesBudgets() != want {
			t.Fatalf("%s says it shares budgets: %v", eng.Name, st.SharesBudgets())
		}
	})
}
