package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/testenv"
)

func TestImportPersons(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		ctx := context.Background()
		db := eng.NewDatabase(t)
		c := cli{t: t, database: db}
		acc, other := c.newAccount("acme"), c.newAccount("other")
		c.importJSON("custom-fields", acc, "-", `{"collection": "Person", "data_type": "int", "key": "score"}`)
		st := eng.Open(t, db)
		now := domain.T(time.Now())
		tagA, _, err := st.CreateTag(ctx, domain.Tag{AccountID: acc, Name: "A", Context: "person", DateCreated: now})
		if err != nil {
			t.Fatal(err)
		}
		tagB, _, _ := st.CreateTag(ctx, domain.Tag{AccountID: acc, Name: "B", Context: "person", DateCreated: now})
		theirs, _, _ := st.CreateTag(ctx, domain.Tag{AccountID: other, Name: "A", Context: "person", DateCreated: now})
		gone, _, _ := st.CreateTag(ctx, domain.Tag{AccountID: acc, Name: "Gone", Context: "person", DateCreated: now})
		if err := st.ArchiveTag(ctx, acc, gone.ID, time.Now()); err != nil {
			t.Fatal(err)
		}
		countPersons := func(account string) int {
			t.Helper()
			since := time.Now().Add(-time.Hour)
			_, total, err := st.ListPersons(ctx, account, domain.PersonSelection{Mode: domain.PersonWindow, Since: since}, domain.PageRequest{Page: 1, Size: 1})
			if err != nil {
				t.Fatal(err)
			}
			return total
		}
		lookup := func(external string) *domain.Person {
			t.Helper()
			ps, _, err := st.ListPersons(ctx, acc, domain.PersonSelection{Mode: domain.PersonByExternalID, Key: external}, domain.PageRequest{Page: 1, Size: 1})
			if err != nil || len(ps) != 1 {
				t.Fatalf("person %s: %v, %v", external, ps, err)
			}
			return &ps[0]
		}

		var good []string
		for i := range 40 {
			l := fmt.Sprintf(`{"external_id": "ext-%d", "email": "P%d@Example.com", "first_name": "First %d"`, i, i, i)
			switch {
			case i%3 == 0 && i%5 == 0:
				l += fmt.Sprintf(`, "tag_ids": [%q, %q]`, tagA.ID, tagB.ID)
			case i%3 == 0:
				l += fmt.Sprintf(`, "tag_ids": [%q]`, tagA.ID)
			case i%5 == 0:
				l += fmt.Sprintf(`, "tag_ids": [%q], "custom_fields": {"score": %d}`, tagB.ID, i)
			}
			good = append(good, l+"}")
		}
		file := filepath.Join(t.TempDir(), "persons.jsonl")
		if err := os.WriteFile(file, []byte(lines(append(good[:20:20], append([]string{""}, good[20:]...)...)...)), 0o600); err != nil {
			t.Fatal(err)
		}

		// Every line refused before anything is written, by line number.
		bad := lines(good[0],
			`{"external_id": "x", "nickname": "y"}`,
			`{"external_id": 5}`,
			`{"email": "not an email"}`,
			`["not", "an", "object"]`,
			`{"external_id": "x", "external_id": "y"}`,
			`{"external_id": "x", "tag_ids": [""]}`,
			`{"external_id": "x", "tag_ids": "tag_1"}`,
			`{"external_id": "x"`,
			`{"first_name": "a\u0000b"}`,
			`{"external_id": ""}`,
		)
		_, err = c.run(bad, "import", "persons", "--account", acc, "-")
		for _, want := range []string{"10 bad lines", "line 2: /nickname", "line 3: /external_id", "line 4: /email",
			"line 5: The line must be a JSON object", "line 6: /external_id", "line 7: /tag_ids/0", "line 8: /tag_ids",
			"line 9: The line is not valid JSON", "line 10: /first_name", "line 11: /external_id", "nothing was imported"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("bad lines: error %v, want one containing %q", err, want)
			}
		}
		// Lines the store refuses: the first names its line, nothing is written.
		for _, tc := range []struct {
			line, want string
		}{
			{fmt.Sprintf(`{"external_id": "x", "tag_ids": [%q]}`, theirs.ID), "line 41: "},
			{fmt.Sprintf(`{"external_id": "x", "tag_ids": [%q]}`, gone.ID), "line 41: "},
			{`{"external_id": "x", "custom_fields": {"nope": 1}}`, "line 41: "},
			{`{"external_id": "x", "custom_fields": {"score": "high"}}`, "line 41: "},
			// ext-1's person is matched; the email is ext-2's.
			{`{"external_id": "ext-1", "email": "p2@example.com"}`, "line 41: Another person"},
		} {
			_, err := c.run(lines(append(good, tc.line)...), "import", "persons", "--account", acc, "-")
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "nothing was imported") {
				t.Fatalf("%s: error %v, want one containing %q", tc.line, err, tc.want)
			}
			if n := countPersons(acc); n != 0 {
				t.Fatalf("%s: %d persons after a refused import", tc.line, n)
			}
		}

		// A good file: counts, persons, tags, values, events.
		var errOut bytes.Buffer
		var out bytes.Buffer
		err = run(ctx, []string{"import", "persons", "--account", acc, "--json", "--database", db, file}, strings.NewReader(""), &out, &errOut)
		if err != nil {
			t.Fatal(err)
		}
		var res map[string]any
		if err := json.Unmarshal(out.Bytes(), &res); err != nil {
			t.Fatalf("--json printed %q: %v", out.String(), err)
		}
		if res["created"] != 40.0 || res["updated"] != 0.0 || res["unchanged"] != 0.0 || res["imported"] != 40.0 {
			t.Fatalf("--json: %v", res)
		}
		if ms, ok := res["analyze_ms"].(float64); !ok || ms < 0 {
			t.Fatalf("--json gives no time for the statistics: %v", res)
		}
		if errOut.Len() != 0 {
			t.Fatalf("stderr is not a terminal, yet the import printed %q there", errOut.String())
		}
		if n := countPersons(acc); n != 40 {
			t.Fatalf("%d persons, want 40", n)
		}
		p15 := lookup("ext-15")
		if len(p15.TagIDs) != 2 || *p15.Email != "p15@example.com" || *p15.FirstName != "First 15" || p15.UpsertResult != domain.UpsertCreated {
			t.Fatalf("ext-15: %+v", p15)
		}
		if p10 := lookup("ext-10"); len(p10.TagIDs) != 1 || p10.TagIDs[0] != tagB.ID || p10.CustomFields["score"] != "10" {
			t.Fatalf("ext-10: %+v", p10)
		}
		if b, err := st.PendingBurst(ctx, acc, p15.ID); err != nil || b.Event != domain.EventPersonCreated ||
			b.DueAt.Sub(b.OpenedAt) != 5*time.Minute {
			t.Fatalf("ext-15's event: %+v, %v", b, err)
		}
		if n := countPersons(other); n != 0 {
			t.Fatalf("another account got %d persons", n)
		}

		// Again: unchanged; with changes, from standard input: updated.
		if res := c.importJSON("persons", acc, file, ""); res["unchanged"] != 40.0 || res["created"] != 0.0 {
			t.Fatalf("same file again: %v", res)
		}
		changed := lines(good[0], strings.Replace(good[1], "First 1", "Uno", 1),
			fmt.Sprintf(`{"email": "p2@EXAMPLE.com", "tag_ids": [%q]}`, tagB.ID), `{"external_id": "ext-new"}`)
		if res := c.importJSON("persons", acc, "-", changed); res["unchanged"] != 1.0 || res["updated"] != 2.0 || res["created"] != 1.0 {
			t.Fatalf("changed lines: %v", res)
		}
		if p := lookup("ext-1"); *p.FirstName != "Uno" || p.UpsertResult != domain.UpsertUpdated {
			t.Fatalf("ext-1 after the change: %+v", p)
		}
		if p := lookup("ext-2"); len(p.TagIDs) != 1 || p.TagIDs[0] != tagB.ID {
			t.Fatalf("ext-2 after the change: %+v", p)
		}

		// Outside --json, one summary line, with the time the statistics
		// took where the engine keeps them up to date after an import.
		out2, err := c.run(lines(`{"external_id": "ext-last"}`), "import", "persons", "--account", acc, "-")
		if err != nil || !strings.HasPrefix(out2, "Imported 1 persons into account "+acc) ||
			!strings.Contains(out2, "1 created, 0 updated, 0 unchanged") || strings.Count(out2, "\n") != 1 ||
			strings.Contains(out2, "planner statistics brought up to date in") != (eng.Name == "postgres") {
			t.Fatalf("summary %q, %v", out2, err)
		}
	})
}

func TestImportPersonsUsage(t *testing.T) {
	c := cli{t: t, database: filepath.Join(t.TempDir(), "pds.db")}
	acc := c.newAccount("acme")
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"import", "persons", "-"}, "--account is required"},
		{[]string{"import", "persons", "--account", acc}, "exactly one FILE"},
		{[]string{"import", "persons", "--account", acc, filepath.Join(t.TempDir(), "missing.jsonl")}, "no such file"},
		{[]string{"import", "persons", "--account", "acc_missing", "-"}, "acc_missing"},
		{[]string{"import", "persons", "--account", acc, "--webhook-window", "0s", "-"}, "--webhook-window"},
	} {
		if _, err := c.run(`{"external_id": "x"}`, bad.args...); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: error %v, want one containing %q", bad.args, err, bad.want)
		}
	}
	if res := c.importJSON("persons", acc, "-", "\n\n"); res["imported"] != 0.0 || res["created"] != 0.0 {
		t.Fatalf("an empty input: %v", res)
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"import", "persons", "-h"}, strings.NewReader(""), &out, &bytes.Buffer{}); err != nil ||
		!strings.Contains(out.String(), "tag_ids") {
		t.Fatalf("-h: %v, %q", err, out.String())
	}
}
