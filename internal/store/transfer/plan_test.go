package transfer

import (
	"context"
	"slices"
	"testing"

	"github.com/pds-dev/pds/internal/testenv"
)

// TestPlanCoversSchema: every table of each engine's migrated schema is in
// the plan (copied, renumbered, rebuilt or left, and why), every table the
// plan names for an engine is in its schema, and every trigger is one the
// transfer knows what to do in place of. A migration that adds a table or
// a trigger fails here until the transfer says what becomes of it.
func TestPlanCoversSchema(t *testing.T) {
	t.Parallel()
	for _, eng := range []testenv.Engine{testenv.SQLite, testenv.Postgres} {
		t.Run(eng.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := eng.NewDatabase(t)
			if err := migrate(ctx, db); err != nil {
				t.Fatal(err)
			}
			s, err := open(ctx, db, false)
			if err != nil {
				t.Fatal(err)
			}
			defer s.close()
			tables, err := s.tables(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range tables {
				p, ok := planned(name)
				switch {
				case !ok:
					t.Errorf("table %s is not in the transfer's plan (plan.go): say whether it is copied, renumbered, rebuilt or not carried", name)
				case p.only != "" && p.only != eng.Name:
					t.Errorf("table %s is planned for %s only, but %s has it too", name, p.only, eng.Name)
				case p.action != copied && p.why == "":
					t.Errorf("table %s is %s without saying why", name, p.action)
				}
			}
			for _, p := range plan {
				if (p.only == "" || p.only == eng.Name) && !slices.Contains(tables, p.name) {
					t.Errorf("the plan names table %s, which %s's schema lacks", p.name, eng.Name)
				}
			}
			trig, err := s.triggers(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(trig) == 0 {
				t.Fatal("no triggers found: the query is wrong")
			}
			for name, on := range trig {
				if _, ok := triggers[name]; !ok {
					t.Errorf("trigger %s on %s is not known to the transfer (plan.go, triggers): say what it derives, "+
						"and rebuild that after the copy (derived.go)", name, on)
				}
			}
			for _, p := range plan {
				if p.action != copied && p.action != renumbered || !slices.Contains(tables, p.name) {
					continue
				}
				cols, err := s.columns(ctx, p.name)
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range cols {
					if c.kind == kindOther && !(p.name == "person_changes" && c.name == "xid") {
						t.Errorf("%s.%s is of a type (%s) the transfer does not convert (convert.go)", p.name, c.name, c.decl)
					}
				}
			}
		})
	}
}

// TestConvert: the conversions between the engines' types, and a refusal
// of anything else.
func TestConvert(t *testing.T) {
	for _, c := range []struct {
		in   any
		to   kind
		want any
	}{
		{int64(1), kindBool, true},
		{int64(0), kindBool, false},
		{true, kindInt, int64(1)},
		{false, kindInt, int64(0)},
		{int32(7), kindInt, int64(7)},
		{int64(1764633600000), kindInt, int64(1764633600000)},
		{[]byte("ab"), kindText, "ab"},
		{"ab", kindBytes, []byte("ab")},
		{[]byte{0, 1}, kindBytes, []byte{0, 1}},
		{nil, kindBool, nil},
	} {
		got, err := convert(c.in, c.to)
		if err != nil {
			t.Errorf("convert(%#v, %s): %v", c.in, c.to, err)
			continue
		}
		if b, ok := c.want.([]byte); ok {
			if g, ok := got.([]byte); !ok || string(g) != string(b) {
				t.Errorf("convert(%#v, %s) = %#v, want %#v", c.in, c.to, got, c.want)
			}
			continue
		}
		if got != c.want {
			t.Errorf("convert(%#v, %s) = %#v, want %#v", c.in, c.to, got, c.want)
		}
	}
	for _, c := range []struct {
		in any
		to kind
	}{{int64(2), kindBool}, {"1", kindInt}, {int64(1), kindText}, {1.5, kindInt}, {"x", kindOther}} {
		if got, err := convert(c.in, c.to); err == nil {
			t.Errorf("convert(%#v, %s) = %#v, want an error", c.in, c.to, got)
		}
	}
}
