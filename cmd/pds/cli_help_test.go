package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestHelpEverywhere: pds help CMD, pds CMD help, pds CMD --help and -h
// print the same help to stdout and succeed, for every group and command,
// with flags written --flag; pds --version and pds version say what the
// binary is.
func TestHelpEverywhere(t *testing.T) {
	t.Parallel()
	help := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if err := run(context.Background(), args, strings.NewReader(""), &out, &errOut); err != nil || errOut.Len() > 0 {
			t.Fatalf("pds %s: %v, stderr %q", strings.Join(args, " "), err, errOut.String())
		}
		return out.String()
	}
	root := cmdEnv{ctx: context.Background(), stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, ran: new(bool)}.root()
	for _, cmd := range root.Commands() {
		if cmd.Hidden || cmd.Name() == "help" {
			continue
		}
		paths := [][]string{{cmd.Name()}}
		for _, sub := range cmd.Commands() {
			if !sub.Hidden && sub.Name() != "help" {
				paths = append(paths, []string{cmd.Name(), sub.Name()})
			}
		}
		for _, p := range paths {
			want := help(append([]string{"help"}, p...)...)
			if !strings.Contains(want, "Usage:") {
				t.Errorf("pds help %s: %q", strings.Join(p, " "), want)
			}
			for _, form := range [][]string{append(append([]string{}, p...), "--help"), append(append([]string{}, p...), "-h")} {
				if got := help(form...); got != want {
					t.Errorf("pds %s differs from pds help %s:\n%s\n---\n%s", strings.Join(form, " "), strings.Join(p, " "), got, want)
				}
			}
			if len(p) == 1 && cmd.HasSubCommands() {
				if got := help(p[0], "help"); got != want {
					t.Errorf("pds %s help differs from pds help %s", p[0], p[0])
				}
			}
			if strings.Contains(want, " -database") || (strings.Contains(want, "Flags:") && !strings.Contains(want, "--help")) {
				t.Errorf("pds help %s writes flags with one dash:\n%s", strings.Join(p, " "), want)
			}
		}
	}
	if v := help("--version"); !strings.HasPrefix(v, "pds ") {
		t.Errorf("pds --version: %q", v)
	}
	var v struct{ Version, Go string }
	if err := json.Unmarshal([]byte(help("version", "--json")), &v); err != nil || v.Version == "" || !strings.HasPrefix(v.Go, "go") {
		t.Errorf("pds version --json: %+v, %v", v, err)
	}
}

// TestKeysListAndRevoke: the key table names each key, its expiry and its
// last use; revoking a key twice says it was revoked already, and an
// unknown key is named without claiming an account.
func TestKeysListAndRevoke(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "pds.db")
	var acc struct{ ID string }
	pdsJSON(t, &acc, "accounts", "create", "--name", "acme", "--database", db)
	var key struct{ ID string }
	pdsJSON(t, &key, "keys", "create", "--account", acc.ID, "--scopes", "all", "--name", "crm-sync", "--expires-in", "720h", "--database", db)
	out, err := pds(t, "keys", "list", "--account", acc.ID, "--database", db)
	if err != nil || !strings.Contains(out, "NAME") || !strings.Contains(out, "EXPIRES") || !strings.Contains(out, "LAST USED") ||
		!strings.Contains(out, "crm-sync") || !strings.Contains(out, " all ") || !strings.Contains(out, "never") {
		t.Fatalf("keys list: %v\n%s", err, out)
	}
	if out, err := pds(t, "keys", "revoke", key.ID, "--database", db); err != nil || !strings.Contains(out, "Revoked key "+key.ID) {
		t.Fatalf("revoke: %v %s", err, out)
	}
	if out, err := pds(t, "keys", "revoke", key.ID, "--database", db); err != nil || !strings.Contains(out, "was already revoked") {
		t.Fatalf("revoke again: %v %s", err, out)
	}
	if _, err := pds(t, "keys", "revoke", "key_nope", "--database", db); err == nil || strings.Contains(err.Error(), "in this account") ||
		!strings.Contains(err.Error(), `no key "key_nope"`) {
		t.Fatalf("revoke an unknown key: %v", err)
	}
}
