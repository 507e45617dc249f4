package postgres

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pds-dev/pds/internal/domain"
)

func TestParseLSN(t *testing.T) {
	for text, want := range map[string]uint64{"0/0": 0, "0/16B3748": 0x16B3748, "16/B374D848": 0x16_B374D848, "FFFFFFFF/FFFFFFFF": 1<<64 - 1} {
		if got, err := parseLSN(text); err != nil || got != want {
			t.Errorf("parseLSN(%q) = %x, %v; want %x", text, got, err, want)
		}
	}
	for _, bad := range []string{"", "16", "x/1", "1/", "100000000/0"} {
		if _, err := parseLSN(bad); err == nil {
			t.Errorf("parseLSN(%q) took it", bad)
		}
	}
}

// TestFailedReadsFallBack holds which failures of a replica's read send it
// to the primary: a recovery conflict and a replica down do (the one down
// is passed over), a refusal or a caller gone does not.
func TestFailedReadsFallBack(t *testing.T) {
	db := &sql.DB{}
	r := &replica{db: db}
	r.up.Store(true)
	rs := &replicaSet{replicas: []*replica{r}}
	r.set = rs
	ctx := context.Background()
	gone, cancel := context.WithCancel(ctx)
	cancel()
	conflict := &pgconn.PgError{Code: "40001", Message: "canceling statement due to conflict with recovery"}
	for _, c := range []struct {
		name string
		ctx  context.Context
		err  error
		want bool
	}{
		{"a refusal", ctx, domain.NotFound("person", "per_1"), false},
		{"no row", ctx, sql.ErrNoRows, false},
		{"a caller gone", gone, conflict, false},
		{"a recovery conflict", ctx, conflict, true},
		{"another error", ctx, errors.New("something else"), true},
	} {
		if got := rs.Failed(c.ctx, db, c.err); got != c.want {
			t.Errorf("%s: fall back %v, want %v", c.name, got, c.want)
		}
	}
	if !r.up.Load() {
		t.Fatal("a recovery conflict passed the replica over")
	}
	counts := map[string]uint64{}
	for _, c := range rs.reads.all() {
		counts[c.Target+"/"+c.Reason] = c.N
	}
	if counts["fallback/recovery_conflict"] != 1 || counts["fallback/error"] != 1 {
		t.Fatalf("counted %v", counts)
	}
}
