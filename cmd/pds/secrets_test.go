package main

import (
	"bytes"
	"database/sql"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/webhook/webhooktest"
	"github.com/pds-dev/pds/pkg/webhookverify"
)

// TestSecretsAtRest: with --secrets-key-file, the database file, its
// write-ahead log and a pds backup hold no webhook signing secret (current,
// previous or retired) and no suppression secret in clear, while every
// delivery still verifies with the secret the API showed. A database that
// began in clear is sealed when the server starts with a key. pds secrets
// rotate-key seals everything under a new key, after which a server with
// the new key alone keeps every subscription delivering, and one with the
// old key alone, or none, refuses to start rather than sign with nothing.
func TestSecretsAtRest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "pds.db")
	keyFile := func(name string, keys ...string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Join(keys, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const (
		keyA = "2b7e151628aed2a6abf7158809cf4f3c2b7e151628aed2a6abf7158809cf4f3c"
		keyB = "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4"
	)
	onlyA, onlyB, bThenA := keyFile("a.key", keyA), keyFile("b.key", keyB), keyFile("ba.key", keyB, keyA)

	rc := webhooktest.NewReceiver(t)
	caFile := filepath.Join(dir, "receiver.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rc.Server.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	hooks := []string{"--webhook-allow-private", "--webhook-ca-file", caFile, "--webhook-window", "100ms"}
	waitFor := func(n int) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for len(rc.Requests()) < n {
			if time.Now().After(deadline) {
				t.Fatalf("%d deliveries within 30 s, want %d", len(rc.Requests()), n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	verified := func(from int, secrets map[string]string) {
		t.Helper()
		for _, req := range rc.Requests()[from:] {
			hook := req.Header.Get(webhookverify.HeaderWebhookID)
			if err := webhookverify.Verify(req.Header, req.Body, []string{secrets[hook]}, time.Now(), webhookverify.Options{}); err != nil {
				t.Fatalf("a delivery of %s does not verify with its secret: %v", hook, err)
			}
		}
	}
	clearSecrets := func(file string) []string {
		t.Helper()
		var found []string
		for _, f := range []string{file, file + "-wal"} {
			raw, err := os.ReadFile(f)
			if os.IsNotExist(err) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(raw, []byte("whsec_")) {
				found = append(found, filepath.Base(f))
			}
		}
		return found
	}

	// In clear first, as a database of an earlier version: the server
	// says so.
	var key string
	secrets := map[string]string{}
	var hookIDs []string
	out := serveOnce(t, db, func(base, k string) {
		key = k
		for _, scheme := range []string{"pds", "standard-webhooks"} {
			status, hook := callAPI(t, base, key, "POST", "/webhooks", map[string]any{"name": scheme, "target_url": rc.URL,
				"events": []string{"person.created", "person.updated"}, "signature_scheme": scheme})
			if status != 201 {
				t.Fatalf("subscribe: %d %v", status, hook)
			}
			id := hook["id"].(string)
			secrets[id], hookIDs = hook["secret"].(string), append(hookIDs, id)
		}
	}, hooks...)
	if found := clearSecrets(db); len(found) == 0 {
		t.Fatal("without a key the secrets are not in the file: the scan cannot see them")
	}
	_ = out

	// With the key: sealed at start, rotated, suppressed, delivered.
	serveOnce(t, db, func(base, _ string) {
		status, rotated := callAPI(t, base, key, "POST", "/webhooks/"+hookIDs[0]+"/rotate-secret", nil)
		if status != 200 {
			t.Fatalf("rotate: %d %v", status, rotated)
		}
		secrets[hookIDs[0]] = rotated["secret"].(string)
		if status, p := callAPI(t, base, key, "POST", "/persons", map[string]any{"email": "sealed@x.test"}); status != 201 {
			t.Fatalf("upsert: %d %v", status, p)
		} else if status, _ := callAPI(t, base, key, "DELETE", "/persons/"+p["id"].(string)+"?suppress=true", nil); status != 204 {
			t.Fatalf("erase: %d", status)
		}
		callAPI(t, base, key, "POST", "/persons", map[string]any{"email": "ada@x.test"})
		waitFor(2)
	}, append(hooks, "--secrets-key-file", onlyA)...)
	verified(0, secrets)
	if found := clearSecrets(db); len(found) > 0 {
		t.Fatalf("with a key, %v still hold a whsec_ secret", found)
	}
	raw, err := sql.Open("sqlite", "file:"+db+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, q := range []string{
		`SELECT COUNT(*) FROM webhooks WHERE secret NOT LIKE 'pds-sealed:v1:%' OR previous_secret NOT LIKE 'pds-sealed:v1:%'`,
		`SELECT COUNT(*) FROM webhook_secrets WHERE secret NOT LIKE 'pds-sealed:v1:%'`,
		`SELECT COUNT(*) FROM suppression_secrets WHERE CAST(secret AS TEXT) NOT LIKE 'pds-sealed:v1:%'`,
		`SELECT 1 - COUNT(*) FROM suppression_secrets`,
	} {
		var n int
		if err := raw.QueryRow(q).Scan(&n); err != nil || n != 0 {
			t.Fatalf("%s: %d (%v)", q, n, err)
		}
	}
	backup := filepath.Join(dir, "backup.db")
	if out, err := pds(t, "backup", "--database", db, backup); err != nil {
		t.Fatalf("backup: %v\n%s", err, out)
	}
	if found := clearSecrets(backup); len(found) > 0 {
		t.Fatal("the backup holds a whsec_ secret")
	}

	// Rotation: the new key first, the old one after it, while it runs.
	if out, err := pds(t, "secrets", "rotate-key", "--database", db, "--secrets-key-file", bThenA, "--json"); err != nil ||
		!strings.Contains(out, `"resealed"`) {
		t.Fatalf("rotate-key: %v\n%s", err, out)
	}
	for name, file := range map[string]string{"the old key alone": onlyA, "no key": ""} {
		args := []string{"serve", "--addr", "127.0.0.1:0", "--database", db}
		if file != "" {
			args = append(args, "--secrets-key-file", file)
		}
		if out, err := pds(t, args...); err == nil || !strings.Contains(out, "sealed under key") {
			t.Errorf("serving with %s after the rotation: %v\n%s", name, err, out)
		}
	}
	before := len(rc.Requests())
	serveOnce(t, db, func(base, _ string) {
		callAPI(t, base, key, "POST", "/persons", map[string]any{"email": "grace@x.test"})
		waitFor(before + 2)
	}, append(hooks, "--secrets-key-file", onlyB)...)
	verified(before, secrets)
	if found := clearSecrets(db); len(found) > 0 {
		t.Fatalf("after the rotation %v hold a whsec_ secret", found)
	}
}
