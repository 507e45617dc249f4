package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/httpapi/apitest"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/testenv"
)

// pds runs one command line and returns what it printed.
func pds(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, strings.NewReader(""), &out, &errOut)
	if err != nil {
		return out.String() + errOut.String(), err
	}
	return out.String(), nil
}

func pdsJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	out, err := pds(t, append(args, "--json")...)
	if err != nil {
		t.Fatalf("pds %v: %v\n%s", args, err, out)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("pds %v printed %q, not one JSON object: %v", args, out, err)
	}
}

func TestAccountsAndKeys(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		db := eng.NewDatabase(t)
		if out, err := pds(t, "migrate", "--database", db); err != nil || !strings.Contains(out, "Applied ") {
			t.Fatalf("migrate: %v %s", err, out)
		}
		if out, err := pds(t, "migrate", "--database", db); err != nil || !strings.Contains(out, "up to date: no migration was pending") {
			t.Fatalf("migrate again: %v %s", err, out)
		}
		var acc struct{ ID, Name string }
		pdsJSON(t, &acc, "accounts", "create", "--name", "acme", "--database", db)
		if !strings.HasPrefix(acc.ID, "acc_") || acc.Name != "acme" {
			t.Fatalf("accounts create: %+v", acc)
		}
		var accounts struct{ Accounts []struct{ ID string } }
		pdsJSON(t, &accounts, "accounts", "list", "--database", db)
		if len(accounts.Accounts) != 1 || accounts.Accounts[0].ID != acc.ID {
			t.Fatalf("accounts list: %+v", accounts)
		}

		var key struct {
			ID, Key, Prefix string
			LastFour        string   `json:"last_four"`
			Scopes          []string `json:"scopes"`
			RateLimit       int      `json:"rate_limit"`
			ExpiresAt       string   `json:"expires_at"`
			Name            string   `json:"name"`
		}
		pdsJSON(t, &key, "keys", "create", "--account", acc.ID, "--scopes", "persons:read, tags:write",
			"--name", "crm", "--expires-in", "720h", "--rate-limit", "120", "--database", db)
		if !strings.HasPrefix(key.Key, key.Prefix+"_") || !strings.HasSuffix(key.Key, key.LastFour) ||
			len(key.Prefix) != len("pds_")+8 || strings.Join(key.Scopes, ",") != "persons:read,tags:write" ||
			key.RateLimit != 120 || key.ExpiresAt == "" || key.Name != "crm" {
			t.Fatalf("keys create: %+v", key)
		}
		var all struct{ Scopes []string }
		pdsJSON(t, &all, "keys", "create", "--account", acc.ID, "--scopes", "all", "--database", db)
		if len(all.Scopes) != 14 || all.Scopes[12] != "persons:erase" || all.Scopes[13] != "keys:write" {
			t.Fatalf("--scopes all gave %v", all.Scopes)
		}

		var keys struct {
			Keys []map[string]any
		}
		pdsJSON(t, &keys, "keys", "list", "--account", acc.ID, "--database", db)
		if len(keys.Keys) != 2 {
			t.Fatalf("keys list: %+v", keys)
		}
		for _, k := range keys.Keys {
			if _, leaked := k["key"]; leaked {
				t.Fatal("keys list shows a secret")
			}
		}
		var revoked struct{ Revoked bool }
		pdsJSON(t, &revoked, "keys", "revoke", key.ID, "--database", db)
		pdsJSON(t, &keys, "keys", "list", "--account", acc.ID, "--database", db)
		if keys.Keys[0]["revoked"] != true {
			t.Fatalf("after revoke: %+v", keys.Keys[0])
		}

		for _, bad := range [][]string{
			{"keys", "create", "--account", acc.ID, "--scopes", "persons:fly"},
			{"keys", "create", "--account", "acc_missing", "--scopes", "all"},
			{"keys", "create", "--account", acc.ID},
			{"keys", "create", "--account", acc.ID, "--scopes", "all", "--expires-in", "soon"},
			{"keys", "revoke", "key_missing"},
			{"accounts", "create"},
			{"nonsense"},
		} {
			if out, err := pds(t, append(bad, "--database", db)...); err == nil {
				t.Errorf("pds %v succeeded: %s", bad, out)
			}
		}
	})
}

// TestEnvironmentDefaultsAndFlagsWin sets PDS_DATABASE, so it is not
// parallel: it runs before the parallel tests start.
func TestEnvironmentDefaultsAndFlagsWin(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PDS_DATABASE", dir+"/env.db")
	var acc struct{ ID string }
	pdsJSON(t, &acc, "accounts", "create", "--name", "from-env")
	var list struct{ Accounts []struct{ Name string } }
	pdsJSON(t, &list, "accounts", "list", "--database", dir+"/env.db")
	if len(list.Accounts) != 1 || list.Accounts[0].Name != "from-env" {
		t.Fatalf("PDS_DATABASE was not used: %+v", list)
	}
	pdsJSON(t, &list, "accounts", "list", "--database", dir+"/flag.db")
	if len(list.Accounts) != 0 {
		t.Fatalf("the flag did not win over PDS_DATABASE: %+v", list)
	}
}

// TestServeBootstrapsAndShutsDown: the first start prints one key with every
// scope, which answers GET /me; a second start prints none; cancelling the
// context (SIGTERM) stops the server cleanly.
func TestServeBootstrapsAndShutsDown(t *testing.T) {
	t.Parallel()
	db := t.TempDir() + "/pds.db"
	out := serveOnce(t, db, func(base, key string) {
		req, err := http.NewRequest("GET", base+"/me", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("GET /me with the printed key: %d", res.StatusCode)
		}
	})
	if strings.Count(out, "pds_") < 1 || !strings.Contains(out, "every scope") {
		t.Fatalf("first start printed %q", out)
	}
	if again := serveOnce(t, db, nil); strings.Contains(again, "pds_") {
		t.Fatalf("second start printed a key again: %q", again)
	}
}

func serveOnce(t *testing.T, db string, probe func(base, key string), flags ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut testenv.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0", "--database", db}, flags...), strings.NewReader(""), &out, &errOut)
	}()
	// The address comes from this server's own log line, never from a port
	// picked beforehand that another test could take in between.
	deadline := time.Now().Add(30 * time.Second)
	addr := ""
	for addr == "" {
		addr = servingAddr(strings.NewReader(errOut.String()))
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("server did not come up:\n%s", errOut.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	base := "http://" + addr
	if probe != nil {
		fields := strings.Fields(out.String())
		key := ""
		for _, f := range fields {
			if strings.HasPrefix(f, "pds_") {
				key = f
				break
			}
		}
		probe(base, key)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	if !strings.Contains(errOut.String(), `"msg":"stopped"`) {
		t.Errorf("no shutdown log line in %s", errOut.String())
	}
	return out.String()
}

// TestKeysRevokeReachesRunningServers: `pds keys revoke` (its own store, as
// when run as a process of its own) refuses the key on the very next
// request to a server that has it cached.
func TestKeysRevokeReachesRunningServers(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		db := eng.NewDatabase(t)
		env := apitest.NewOn(t, eng.Open(t, db))
		key, k := env.KeyWith(service.KeyRequest{AccountID: env.NewAccount()})
		for range 3 {
			env.Get(key, "/me").Want(200)
		}
		if out, err := pds(t, "keys", "revoke", k.ID, "--database", db); err != nil {
			t.Fatalf("pds keys revoke: %v\n%s", err, out)
		}
		env.Get(key, "/me").Want(401)
	})
}
