package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pds-dev/pds/internal/testenv"
)

// TestExportThenImportRoundTrips: what GET /persons/export writes, pds
// import persons takes as it is, and into the account it came from it puts
// every person back as exported, so the export that follows is the same,
// byte for byte (a survivor's aliases too, which the import leaves as they
// are); imported once more, it changes nothing.
func TestExportThenImportRoundTrips(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		db := eng.NewDatabase(t)
		c := cli{t: t, database: db}
		file := filepath.Join(t.TempDir(), "persons.jsonl")
		serveOnce(t, db, func(base, key string) {
			call := apiCaller(t, base, key)
			export := func() []byte {
				t.Helper()
				req, _ := http.NewRequest("GET", base+"/persons/export", nil)
				req.Header.Set("Authorization", "Bearer "+key)
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer res.Body.Close()
				body, err := io.ReadAll(res.Body)
				if err != nil || res.StatusCode != 200 {
					t.Fatalf("export: %d %v", res.StatusCode, err)
				}
				return body
			}
			account := call("GET", "/me", nil, 200)["account_id"].(string)
			call("POST", "/custom-fields", map[string]any{"collection": "Person", "key": "score", "data_type": "int", "form_type": "text", "label": "Score"}, 201)
			vip := call("POST", "/tags", map[string]any{"name": "vip", "context": "person"}, 201)["id"].(string)
			ada := call("POST", "/persons", map[string]any{"email": "ada@example.org", "external_id": "crm-1", "f_id": "f-1",
				"first_name": "Ada", "phone": "+44 20 7946 0000", "custom_fields": map[string]any{"score": 5}}, 201)["id"].(string)
			call("POST", "/persons/"+ada+"/tags", map[string]any{"tag_ids": []string{vip}}, 200)
			bob := call("POST", "/persons", map[string]any{"external_id": "crm-2", "last_name": "Babbage"}, 201)["id"].(string)
			// A duplicate merged into Bob: his line carries its external id
			// as an alias, which the import reads and leaves as it is.
			dup := call("POST", "/persons", map[string]any{"external_id": "crm-3", "email": "charles@example.org"}, 201)["id"].(string)
			call("POST", "/persons/"+bob+"/merge", map[string]any{"from": dup}, 200)
			exported := export()
			if !strings.Contains(string(exported), `"aliases":[{"kind":"external_id","value":"crm-3","from":"`+dup+`"`) {
				t.Fatalf("the export does not carry the merged duplicate's alias:\n%s", exported)
			}
			if err := os.WriteFile(file, exported, 0o600); err != nil {
				t.Fatal(err)
			}

			// Changed after the export, in every part a restore puts back.
			call("PATCH", "/persons/"+ada, map[string]any{"first_name": "Augusta", "email": "augusta@example.org",
				"custom_fields": map[string]any{"score": 7}}, 200)
			call("DELETE", "/persons/"+ada+"/tags/"+vip, nil, 204)
			call("POST", "/persons/"+bob+"/tags", map[string]any{"tag_ids": []string{vip}}, 200)

			res := c.importJSON("persons", account, file, "")
			if res["updated"] != float64(2) || res["created"] != float64(0) {
				t.Errorf("restoring the export: %v, want 2 updated", res)
			}
			if got := export(); string(got) != string(exported) {
				t.Fatalf("after the import the export is\n%s\nwant\n%s", got, exported)
			}
			if res := c.importJSON("persons", account, file, ""); res["unchanged"] != float64(2) {
				t.Errorf("importing the export again: %v, want 2 unchanged", res)
			}
		})
	})
}
