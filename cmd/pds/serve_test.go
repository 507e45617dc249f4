package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeFailureIsLogged: once the logger exists, a failure to start (here
// the database cannot be reached) is a line of the JSON log, like every
// other line the server writes, and main does not print it again as plain
// text.
func TestServeFailureIsLogged(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"serve", "--addr", "127.0.0.1:0", "--database", "postgres://nobody@127.0.0.1:1/none?connect_timeout=5"},
		strings.NewReader(""), &out, &errOut)
	var logged loggedError
	if err == nil || !errors.As(err, &logged) {
		t.Fatalf("serve on an unreachable database: %v, want an error marked as logged", err)
	}
	found := false
	for _, raw := range strings.Split(strings.TrimSpace(errOut.String()), "\n") {
		var line map[string]any
		if err := json.Unmarshal([]byte(raw), &line); err != nil {
			t.Fatalf("serve wrote a line outside its JSON log: %q", raw)
		}
		if line["msg"] == "serve failed" && line["level"] == "ERROR" && line["error"] == err.Error() {
			found = true
		}
	}
	if !found {
		t.Fatalf("no serve failed line naming %q in:\n%s", err, errOut.String())
	}
}

// TestServeOnTakenAddressTouchesNothing: a taken --addr (or --metrics-addr)
// fails before the database is opened: one error naming the flag and the
// address, exit status 1, and no file, account or key.
func TestServeOnTakenAddressTouchesNothing(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().String()
	for _, tc := range []struct{ flag, args string }{
		{"addr", "--addr " + taken},
		{"metrics-addr", "--addr 127.0.0.1:0 --metrics-addr " + taken},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "pds.db")
			var out, errOut bytes.Buffer
			args := append(append([]string{"serve"}, strings.Fields(tc.args)...), "--database", db)
			err := run(context.Background(), args, strings.NewReader(""), &out, &errOut)
			if err == nil {
				t.Fatal("serve on a taken address succeeded")
			}
			if got := exitStatus(err); got != 1 {
				t.Errorf("exit status %d, want 1", got)
			}
			msg := err.Error()
			for _, want := range []string{"--" + tc.flag, envName(tc.flag), taken, "address already in use"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not name %q", msg, want)
				}
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error %q is more than one line", msg)
			}
			if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the database file was created (%v)", err)
			}
			if out.Len() != 0 || errOut.Len() != 0 {
				t.Errorf("serve wrote before failing:\nstdout: %s\nstderr: %s", &out, &errOut)
			}
		})
	}
}
