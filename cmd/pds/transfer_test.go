package main

import (
	"bytes"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/internal/webhook/webhooktest"
	"github.com/pds-dev/pds/pkg/webhookverify"
)

// transferAccount is what the test knows of one account of the instance
// it moves.
type transferAccount struct {
	id, key   string
	hook      string // the subscription's id
	secret    string // its signing secret, as the API showed it once
	crumb     string // a breadcrumb's id, appended with an Idempotency-Key
	crumbBody map[string]any
	crumbKey  string
	erased    string // an identifier an erasure suppressed
	export    []byte // GET /persons/export as the last server answered it
}

// TestTransferBetweenEngines: an instance filled through the API on SQLite
// and moved to PostgreSQL with pds transfer serves there as it did: each
// account's export is the same, the old keys work, a replayed
// Idempotency-Key finds its breadcrumb, a suppressed identifier is still
// refused, and a change made after the move is delivered to the
// subscription, signed with its old secret. A second transfer into the
// filled target is refused (exit status 2) and changes nothing. Then the
// same, from PostgreSQL back to a new SQLite file.
func TestTransferBetweenEngines(t *testing.T) {
	t.Parallel()
	pg := testenv.Postgres.NewDatabase(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "pds.db")
	rc := webhooktest.NewReceiver(t)
	caFile := filepath.Join(dir, "receiver.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rc.Server.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	hooks := []string{"--webhook-allow-private", "--webhook-ca-file", caFile, "--webhook-window", "100ms"}

	var accounts []*transferAccount
	serveOnce(t, src, func(base, key string) {
		var other struct{ ID string }
		pdsJSON(t, &other, "accounts", "create", "--name", "other", "--database", src)
		var otherKey struct{ Key string }
		pdsJSON(t, &otherKey, "keys", "create", "--account", other.ID, "--scopes", "all", "--database", src)
		_, me := callAPI(t, base, key, "GET", "/me", nil)
		for i, a := range []*transferAccount{{id: me["account_id"].(string), key: key}, {id: other.ID, key: otherKey.Key}} {
			fillAccount(t, base, a, rc, i)
			accounts = append(accounts, a)
		}
		waitDeliveries(t, rc, 4) // each account: a person created, a person updated
		for _, a := range accounts {
			a.export = export(t, base, a)
		}
	}, hooks...)

	var rep struct {
		Rows   int64
		Tables []struct {
			Table  string
			Action string
			Source int64 `json:"source_rows"`
			Target int64 `json:"target_rows"`
		}
	}
	pdsJSON(t, &rep, "transfer", "--from", src, "--to", pg)
	copied := map[string]int64{}
	for _, tr := range rep.Tables {
		if tr.Action == "copied" {
			if tr.Source != tr.Target {
				t.Errorf("%s: %d rows in the source, %d in the target", tr.Table, tr.Source, tr.Target)
			}
			copied[tr.Table] = tr.Target
		}
	}
	for _, table := range []string{"accounts", "api_keys", "persons", "breadcrumbs", "webhooks", "deliveries", "delivery_attempts", "suppressions", "erasures"} {
		if copied[table] == 0 {
			t.Errorf("no rows of %s copied: %v", table, rep)
		}
	}
	checkServes(t, pg, accounts, rc, hooks, "pg")
	refusedAndUnchanged(t, src, pg, accounts, hooks)

	back := filepath.Join(dir, "back.db")
	if out, err := pds(t, "transfer", "--from", pg, "--to", back); err != nil {
		t.Fatalf("transfer to SQLite: %v\n%s", err, out)
	}
	checkServes(t, back, accounts, rc, hooks, "back")
	refusedAndUnchanged(t, pg, back, accounts, hooks)
}

// fillAccount gives an account a tag, a custom field, persons holding
// both, a subscription, a breadcrumb appended with an Idempotency-Key and
// an erased person whose identifiers are suppressed.
func fillAccount(t *testing.T, base string, a *transferAccount, rc *webhooktest.Receiver, i int) {
	t.Helper()
	must := func(want int, method, path string, body any) map[string]any {
		t.Helper()
		status, out := callAPI(t, base, a.key, method, path, body)
		if status != want {
			t.Fatalf("%s %s: %d %v, want %d", method, path, status, out, want)
		}
		return out
	}
	hook := must(201, "POST", "/webhooks", map[string]any{"name": "crm", "target_url": rc.URL, "events": []string{"person.created", "person.updated"}})
	a.hook, a.secret = hook["id"].(string), hook["secret"].(string)
	tag := must(201, "POST", "/tags", map[string]any{"name": "newsletter", "context": "person"})["id"].(string)
	must(201, "POST", "/custom-fields", map[string]any{"collection": "Person", "data_type": "str", "key": "plan"})
	var persons []string
	for j := range 3 {
		p := must(201, "POST", "/persons", map[string]any{"external_id": fmt.Sprintf("crm-%d-%d", i, j), "email": fmt.Sprintf("p%d@a%d.test", j, i),
			"first_name": "Grace", "custom_fields": map[string]any{"plan": "gold"}})
		persons = append(persons, p["id"].(string))
		must(200, "POST", "/persons/"+p["id"].(string)+"/tags", map[string]any{"tag_ids": []string{tag}})
	}
	a.crumbKey = fmt.Sprintf("signup-%d", i)
	a.crumbBody = map[string]any{"flavor": "form_submission", "email": fmt.Sprintf("p1@a%d.test", i)}
	a.crumb = breadcrumb(t, base, a, 201)
	a.erased = fmt.Sprintf("p2@a%d.test", i)
	if status, _ := callAPI(t, base, a.key, "DELETE", "/persons/"+persons[2]+"?suppress=true", nil); status != 204 {
		t.Fatalf("erase: %d", status)
	}
	// A later change to the first person, delivered as person.updated.
	time.Sleep(150 * time.Millisecond)
	must(200, "PATCH", "/persons/"+persons[0], map[string]any{"last_name": "Hopper"})
}

// breadcrumb appends the account's breadcrumb with its Idempotency-Key and
// returns its id.
func breadcrumb(t *testing.T, base string, a *transferAccount, want ...int) string {
	t.Helper()
	body, err := json.Marshal(a.crumbBody)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest("POST", base+"/breadcrumbs", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+a.key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", a.crumbKey)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out struct{ ID string }
	raw, _ := io.ReadAll(res.Body)
	if err := json.Unmarshal(raw, &out); err != nil || !slices.Contains(want, res.StatusCode) {
		t.Fatalf("breadcrumb: %d %s, want %v", res.StatusCode, raw, want)
	}
	return out.ID
}

// export reads GET /persons/export of an account.
func export(t *testing.T, base string, a *transferAccount) []byte {
	t.Helper()
	req, err := http.NewRequest("GET", base+"/persons/export", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+a.key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != 200 || len(raw) == 0 {
		t.Fatalf("export: %d %s (%v)", res.StatusCode, raw, err)
	}
	return raw
}

func waitDeliveries(t *testing.T, rc *webhooktest.Receiver, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for len(rc.Requests()) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d deliveries within 30 s, want %d", len(rc.Requests()), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkServes serves db and checks that it holds what was moved; it then
// changes a person of each account, which the subscription must deliver,
// and keeps each account's export for the next move.
func checkServes(t *testing.T, db string, accounts []*transferAccount, rc *webhooktest.Receiver, hooks []string, round string) {
	t.Helper()
	serveOnce(t, db, func(base, printed string) {
		if printed != "" {
			t.Errorf("the server on the transferred database made a first account and key %s", printed)
		}
		for i, a := range accounts {
			if got := export(t, base, a); !bytes.Equal(got, a.export) {
				t.Errorf("account %s exports after the transfer:\n%s\nbefore:\n%s", a.id, got, a.export)
			}
			if status, me := callAPI(t, base, a.key, "GET", "/me", nil); status != 200 || me["account_id"] != a.id {
				t.Errorf("the old key of %s: %d %v", a.id, status, me)
			}
			if id := breadcrumb(t, base, a, 200, 201); id != a.crumb {
				t.Errorf("replaying Idempotency-Key %s gave breadcrumb %s, want %s", a.crumbKey, id, a.crumb)
			}
			status, p := callAPI(t, base, a.key, "POST", "/persons", map[string]any{"email": a.erased})
			if status != 409 || p["type"] != "urn:pds:problem:suppressed" {
				t.Errorf("the suppressed %s upserted: %d %v", a.erased, status, p)
			}
			before := len(rc.Requests())
			email := fmt.Sprintf("after-%s-%d@x.test", round, i)
			if status, p := callAPI(t, base, a.key, "POST", "/persons", map[string]any{"email": email}); status != 201 {
				t.Fatalf("a person after the transfer: %d %v", status, p)
			}
			waitDeliveries(t, rc, before+1)
			req := rc.Requests()[before]
			if got := req.Header.Get(webhookverify.HeaderWebhookID); got != a.hook {
				t.Errorf("delivered for subscription %s, want %s", got, a.hook)
			}
			if err := webhookverify.Verify(req.Header, req.Body, []string{a.secret}, time.Now(), webhookverify.Options{}); err != nil {
				t.Errorf("the delivery after the transfer does not verify with the old secret: %v", err)
			}
			if !bytes.Contains(req.Body, []byte(email)) {
				t.Errorf("the delivery after the transfer is not the new person's: %s", req.Body)
			}
			a.export = export(t, base, a)
		}
	}, hooks...)
}

// refusedAndUnchanged transfers from into the filled to again: refused,
// with exit status 2, and to exports as before.
func refusedAndUnchanged(t *testing.T, from, to string, accounts []*transferAccount, hooks []string) {
	t.Helper()
	out, err := pds(t, "transfer", "--from", from, "--to", to)
	var usage usageError
	if err == nil || !errors.As(err, &usage) || exitStatus(err) != 2 || !bytes.Contains([]byte(out+err.Error()), []byte("holds an account")) {
		t.Fatalf("a transfer into a filled target: %v\n%s", err, out)
	}
	serveOnce(t, to, func(base, _ string) {
		for _, a := range accounts {
			if got := export(t, base, a); !bytes.Equal(got, a.export) {
				t.Errorf("the refused transfer changed account %s", a.id)
			}
		}
	}, hooks...)
}
