package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/testenv"
)

// cli runs the binary's command line against one database.
type cli struct {
	t        *testing.T
	database string
}

func (c cli) run(stdin string, args ...string) (stdout string, err error) {
	c.t.Helper()
	var out, errOut bytes.Buffer
	err = run(context.Background(), append(args, "--database", c.database), strings.NewReader(stdin), &out, &errOut)
	return out.String(), err
}

// importJSON runs an import that must succeed and returns its --json output.
func (c cli) importJSON(kind, account, file, stdin string) map[string]any {
	c.t.Helper()
	out, err := c.run(stdin, "import", kind, "--account", account, "--json", file)
	if err != nil {
		c.t.Fatalf("import %s: %v", kind, err)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		c.t.Fatalf("import %s --json printed %q: %v", kind, out, err)
	}
	return res
}

// importFails runs an import that must fail naming the line.
func (c cli) importFails(kind, account, stdin, line string) {
	c.t.Helper()
	_, err := c.run(stdin, "import", kind, "--account", account, "-")
	if err == nil || !strings.Contains(err.Error(), line) || !strings.Contains(err.Error(), "nothing was imported") {
		c.t.Fatalf("import %s of %q: error %v, want one naming %q", kind, stdin, err, line)
	}
}

func (c cli) newAccount(name string) string {
	c.t.Helper()
	out, err := c.run("", "accounts", "create", "--name", name, "--json")
	if err != nil {
		c.t.Fatal(err)
	}
	var a struct{ ID string }
	if err := json.Unmarshal([]byte(out), &a); err != nil || a.ID == "" {
		c.t.Fatalf("accounts create printed %q", out)
	}
	return a.ID
}

func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }

func TestImport(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		ctx := context.Background()
		db := eng.NewDatabase(t)
		c := cli{t: t, database: db}
		acc, other := c.newAccount("acme"), c.newAccount("other")
		page := domain.PageRequest{Page: 1, Size: 100}

		file := filepath.Join(t.TempDir(), "projects.jsonl")
		projects := lines(
			`{"id": "prj_summit", "name": "Summit", "location": "Lisbon", "site_url": "https://summit.example", "registration_url": "https://summit.example/r", "date_created": "2026-01-02T03:04:05.678+01:00", "date_start": "2026-06-01T09:00:00Z", "date_end": "2026-06-03T18:00:00Z"}`,
			``,
			`{"name": "Unnamed id"}`,
		)
		if err := os.WriteFile(file, []byte(projects), 0o600); err != nil {
			t.Fatal(err)
		}
		if res := c.importJSON("projects", acc, file, ""); res["imported"] != 2.0 || res["kind"] != "projects" || res["account_id"] != acc {
			t.Fatalf("import projects --json: %v", res)
		}
		campaigns := lines(
			`{"id": "cmp_spring", "name": "Spring", "description": "Newsletter", "kind": "email", "state": "running", "is_enabled": true, "project_id": "prj_summit", "date_start": "2026-03-01T00:00:00Z"}`,
			`{"name": "Loose"}`,
		)
		if res := c.importJSON("campaigns", acc, "-", campaigns); res["imported"] != 2.0 {
			t.Fatalf("import campaigns from stdin: %v", res)
		}
		fields := lines(
			`{"id": "cf_crm_score", "collection": "Person", "data_type": "int", "key": "crm_score", "label": "CRM score", "is_read_only": true, "is_default": true}`,
			`{"collection": "Breadcrumb", "data_type": "str", "key": "channel", "form_type": "url"}`,
		)
		if res := c.importJSON("custom-fields", acc, "-", fields); res["imported"] != 2.0 || res["kind"] != "custom-fields" {
			t.Fatalf("import custom-fields: %v", res)
		}
		out, err := c.run(`{"name": "Plain"}`, "import", "projects", "--account", other, "-")
		if err != nil || !strings.Contains(out, "Imported 1 projects") {
			t.Fatalf("text output %q, %v", out, err)
		}

		st := eng.Open(t, db)
		p, err := st.GetProject(ctx, acc, "prj_summit")
		if err != nil || p.Name != "Summit" || *p.Location != "Lisbon" || *p.SiteURL != "https://summit.example" ||
			p.DateCreated.Format(domain.TimeLayout) != "2026-01-02T02:04:05.678Z" || p.DateEnd.Format(domain.TimeLayout) != "2026-06-03T18:00:00.000Z" {
			t.Fatalf("imported project: %+v, %v", p, err)
		}
		cmp, err := st.GetCampaign(ctx, acc, "cmp_spring")
		if err != nil || !cmp.IsEnabled || *cmp.ProjectID != "prj_summit" || *cmp.Kind != "email" || cmp.DateEnd != nil {
			t.Fatalf("imported campaign: %+v, %v", cmp, err)
		}
		f, err := st.GetCustomField(ctx, acc, "cf_crm_score")
		if err != nil || !f.IsReadOnly || !f.IsDefault || f.FormType != "text" || *f.Label != "CRM score" {
			t.Fatalf("imported field: %+v, %v", f, err)
		}
		if _, total, err := st.ListCustomFields(ctx, acc, nil, page); err != nil || total != 2 {
			t.Fatalf("fields: %d, want 2, err %v", total, err)
		}

		// Importing a line with an id again updates that record.
		c.importJSON("campaigns", acc, "-", `{"id": "cmp_spring", "name": "Spring again", "is_enabled": false}`)
		cmp, err = st.GetCampaign(ctx, acc, "cmp_spring")
		if err != nil {
			t.Fatal(err)
		}
		if cmp.Name != "Spring again" || cmp.IsEnabled || cmp.ProjectID != nil {
			t.Fatalf("re-imported campaign: %+v", cmp)
		}
		if _, total, err := st.ListCampaigns(ctx, acc, page); err != nil || total != 2 {
			t.Fatalf("re-import added a campaign: %d, err %v", total, err)
		}

		// A bad line anywhere imports nothing of the file; the error names its line.
		good := `{"id": "cmp_new", "name": "Would be new"}`
		for _, bad := range []struct{ kind, input, line string }{
			{"campaigns", lines(good, `{"name": ""}`), "line 2: /name"},
			{"campaigns", lines(good, ``, `{"name": "x", "date_start": "2026-03-01"}`), "line 3: /date_start"},
			{"campaigns", lines(good, `{"name": "x", "date_start": "2026-03-02T00:00:00Z", "date_end": "2026-03-01T00:00:00Z"}`), "line 2: /date_end"},
			{"campaigns", lines(good, `{"name": "x", "budget": 5}`), `line 2: the member "budget"`},
			{"campaigns", lines(good, `{"name": 5}`), "line 2: /name must be of JSON type string"},
			{"campaigns", lines(good, `{"name": "x"`), "line 2: not valid JSON"},
			{"campaigns", lines(good, `["x"]`), "line 2: a line must hold one JSON object"},
			{"campaigns", lines(good, `{"id": "has space", "name": "x"}`), "line 2: /id"},
			{"campaigns", lines(good, `{"name": "x", "project_id": "prj_none"}`), "line 2: project_id"},
			{"campaigns", lines(good, `{"id": "cmp_spring", "name": "x"}`, `{"id": "cmp_other", "name": "x"}`, `{"name": "x", "project_id": "prj_theirs"}`), "line 4: project_id"},
			{"projects", lines(`{"name": "ok"}`, `{"name": "x", "site_url": "ftp://example.com"}`), "line 2: /site_url"},
			{"projects", lines(`{"name": "ok"}`, `{"location": "nowhere"}`), "line 2: /name"},
			// PostgreSQL cannot store a NUL: it is a line error, not a database one.
			{"projects", lines(`{"name": "ok"}`, `{"name": "x", "location": "a\u0000b"}`), "line 2: /location must not contain the NUL"},
			{"campaigns", lines(good, `{"name": "x", "state": "\u0000"}`), "line 2: /state must not contain the NUL"},
			{"custom-fields", lines(`{"collection": "Person", "data_type": "str", "key": "new"}`, `{"collection": "Person", "data_type": "str", "key": "k\u0000"}`), "line 2: /key must not contain the NUL"},
			{"custom-fields", lines(`{"collection": "Person", "data_type": "str", "key": "new"}`, `{"collection": "person", "data_type": "str", "key": "k"}`), "line 2: /collection"},
			{"custom-fields", lines(`{"collection": "Person", "data_type": "str", "key": "new"}`, `{"collection": "Person", "data_type": "text", "key": "k"}`), "line 2: /data_type"},
			{"custom-fields", lines(`{"collection": "Person", "data_type": "str", "key": "new"}`, `{"collection": "Person", "data_type": "str", "key": "k", "form_type": "select"}`), "line 2: /form_type"},
			{"custom-fields", lines(`{"collection": "Person", "data_type": "str", "key": "new"}`, `{"collection": "Person", "data_type": "str", "key": "`+strings.Repeat("é", 256)+`"}`), "line 2: /key"},
			{"custom-fields", lines(`{"collection": "Person", "data_type": "str", "key": "new"}`, `{"collection": "Person", "data_type": "str", "key": "crm_score"}`), "line 2: The custom field cf_crm_score"},
			{"custom-fields", lines(`{"collection": "Person", "data_type": "str", "key": "new"}`, `{"collection": "Person", "data_type": "str", "key": "x", "is_read_only": "yes"}`), "line 2: /is_read_only must be of JSON type boolean"},
		} {
			c.importFails(bad.kind, acc, bad.input, bad.line)
		}
		// An id or a project of another account is refused too.
		if _, err := c.run(lines(`{"id": "prj_theirs", "name": "Theirs"}`), "import", "projects", "--account", other, "-"); err != nil {
			t.Fatal(err)
		}
		c.importFails("projects", acc, lines(`{"name": "ok"}`, `{"id": "prj_theirs", "name": "Mine now"}`), "line 2: the id \"prj_theirs\" belongs to another account")
		c.importFails("campaigns", acc, lines(good, `{"name": "x", "project_id": "prj_theirs"}`), "line 2: project_id")

		if _, err := st.GetCampaign(ctx, acc, "cmp_new"); err == nil {
			t.Fatal("a failed import left its good lines")
		}
		if _, total, err := st.ListCampaigns(ctx, acc, page); err != nil || total != 2 {
			t.Fatalf("failed imports changed the campaigns: %d, err %v", total, err)
		}
		if _, total, err := st.ListProjects(ctx, acc, page); err != nil || total != 2 {
			t.Fatalf("failed imports changed the projects: %d, err %v", total, err)
		}
		if _, total, err := st.ListCustomFields(ctx, acc, nil, page); err != nil || total != 2 {
			t.Fatalf("failed imports changed the fields: %d, err %v", total, err)
		}
		if theirs, err := st.GetProject(ctx, other, "prj_theirs"); err != nil || theirs == nil || theirs.Name != "Theirs" {
			t.Fatalf("another account's project changed: %+v, err %v", theirs, err)
		}
	})
}

func TestImportUsage(t *testing.T) {
	t.Parallel()
	c := cli{t: t, database: filepath.Join(t.TempDir(), "pds.db")}
	acc := c.newAccount("acme")
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"import"}, "say campaigns"},
		{[]string{"import", "tags", "--account", acc, "-"}, `unknown command "tags"`},
		{[]string{"import", "campaigns", "-"}, "--account is required"},
		{[]string{"import", "campaigns", "--account", acc}, "exactly one FILE"},
		{[]string{"import", "campaigns", "--account", acc, filepath.Join(t.TempDir(), "missing.jsonl")}, "no such file"},
		{[]string{"import", "campaigns", "--account", "acc_missing", "-"}, "acc_missing"},
	} {
		if _, err := c.run("", bad.args...); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: error %v, want one containing %q", bad.args, err, bad.want)
		}
	}
	if res := c.importJSON("projects", acc, "-", "\n\n"); res["imported"] != 0.0 {
		t.Fatalf("an empty input: %v", res)
	}
}
