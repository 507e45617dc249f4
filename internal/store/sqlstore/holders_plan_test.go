package sqlstore_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store/sqlstore"
	"github.com/pds-dev/pds/internal/testenv"
)

// TestIdentifierLookupPlan holds the upsert's identifier lookup (and an
// import's) to the unique indexes: for every combination of identifiers,
// each one given is searched on its own index and nothing walks the
// account's persons (with
// "external_id = ? OR email_norm = ? OR f_id = ?" SQLite scanned the whole
// account through persons_last_seen, which in a large account made every
// upsert slow).
func TestIdentifierLookupPlan(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rs := openCounting(t, eng)
		acc, _ := rs.seedAccount(t, 3000)
		rs.seedAccount(t, 500)
		if eng.Name == "postgres" {
			rs.analyze(t)
		}
		ext, email, fid := "ext-17", "P17@seed.test", "f-17"
		for mask := 1; mask < 8; mask++ {
			var e, m, f *string
			var want []string
			if mask&1 != 0 {
				e, want = &ext, append(want, "external_id")
			}
			if mask&2 != 0 {
				m, want = &email, append(want, "email")
			}
			if mask&4 != 0 {
				f, want = &fid, append(want, "f_id")
			}
			query, args := sqlstore.HoldersQuery(acc, e, m, f)
			checkHoldersPlan(t, want, explain(t, rs, query, args))
			if eng.Name == "postgres" {
				// A new person's upsert looks the holders up in its one
				// statement (createUnlessHeld), with their outbox rows.
				query, args := rs.CreateUnlessHeldQuery(acc, e, m, f)
				checkHoldersPlan(t, want, explain(t, rs, query, args))
			}
		}
		// An import's lookup of a chunk's identifiers, one column at a time.
		for column, index := range map[string]string{"external_id": "persons_external_id", "email_norm": "persons_email", "f_id": "persons_f_id"} {
			query, args := sqlstore.TakenQuery(acc, column, []string{"ext-1", "p2@seed.test", "ext-3", "x"})
			plan := strings.Join(explain(t, rs, query, args), "\n")
			if strings.Contains(plan, "SCAN persons") || strings.Contains(plan, "Seq Scan") || !strings.Contains(plan, index) {
				t.Errorf("import lookup of %s does not search %s:\n%s", column, index, plan)
			}
		}
	})
}

// indexOf names each identifier's unique index.
var indexOf = map[string]string{"external_id": "persons_external_id", "email": "persons_email", "f_id": "persons_f_id"}

// checkHoldersPlan fails unless the plan searches each given identifier's
// unique index and walks no persons.
func checkHoldersPlan(t *testing.T, want, plan []string) {
	t.Helper()
	for _, line := range plan {
		// The outbox rows joined to the holders are the planner's to read as
		// it likes: the table holds only the bursts not yet closed.
		if strings.Contains(line, "SCAN persons") || strings.Contains(line, "Seq Scan on persons") {
			t.Errorf("%v: the lookup scans persons:\n%s", want, strings.Join(plan, "\n"))
		}
	}
	joined := strings.Join(plan, "\n")
	for _, id := range want {
		if !strings.Contains(joined, indexOf[id]) {
			t.Errorf("%v: the plan does not use %s:\n%s", want, indexOf[id], joined)
		}
	}
	if strings.Contains(joined, "persons_last_seen") {
		t.Errorf("%v: the plan uses persons_last_seen:\n%s", want, joined)
	}
}

// explain returns the plan of query, one line per node.
func explain(t *testing.T, rs rawStore, query string, args []any) []string {
	t.Helper()
	prefix := "EXPLAIN "
	if rs.Engine() == "sqlite" {
		prefix = "EXPLAIN QUERY PLAN "
	}
	rows, err := rs.db.Query(prefix+query, args...)
	if err != nil {
		t.Fatalf("explain %s: %v", query, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var plan []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		// SQLite: id, parent, notused, detail; PostgreSQL: one text column.
		plan = append(plan, toString(vals[len(vals)-1]))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return plan
}

func toString(v any) string {
	switch v := v.(type) {
	case []byte:
		return string(v)
	case string:
		return v
	}
	return ""
}

// TestHoldersLockPlanOnAGrownAccount: a batch's lock of the persons its
// items name probes each identifier's unique index, even for an account
// that grew after the statistics were taken, which the planner then thinks
// holds a handful of rows (an IN list read the account's whole range of
// persons_account_id instead, which made every batch slow). Only
// PostgreSQL locks holders; SQLite's one writer needs no lock.
func TestHoldersLockPlanOnAGrownAccount(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		if eng.Name != "postgres" {
			t.Skip("only PostgreSQL locks the holders")
		}
		rs := openCounting(t, eng)
		rs.seedAccount(t, 3000)
		rs.analyze(t)
		grown, _ := rs.seedAccount(t, 3000)
		var items []domain.Identifiers
		for i := range 100 {
			ext, email, fid := fmt.Sprintf("ext-%d", i), fmt.Sprintf("P%d@seed.test", i), fmt.Sprintf("f-%d", i)
			items = append(items, domain.Identifiers{ExternalID: &ext, Email: &email, FID: &fid})
		}
		query, args := sqlstore.HoldersLockQuery(grown, items)
		plan := explain(t, rs, query, args)
		checkHoldersPlan(t, []string{"external_id", "email", "f_id"}, plan)
		if joined := strings.Join(plan, "\n"); strings.Contains(joined, "persons_account_id") {
			t.Errorf("the lock reads the account's range of persons_account_id:\n%s", joined)
		}
	})
}
