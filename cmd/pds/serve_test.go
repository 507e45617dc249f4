package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeFailureIsLogged: once the logger exists, a failure to start (here
// the address is taken) is a line of the JSON log, like every other line the
// server writes, and main does not print it again as plain text.
func TestServeFailureIsLogged(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var out, errOut bytes.Buffer
	err = run(context.Background(), []string{"serve", "--addr", ln.Addr().String(), "--database", filepath.Join(t.TempDir(), "pds.db")},
		strings.NewReader(""), &out, &errOut)
	var logged loggedError
	if err == nil || !errors.As(err, &logged) {
		t.Fatalf("serve on a taken address: %v, want an error marked as logged", err)
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
