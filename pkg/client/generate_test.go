package client_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// TestGeneratedClientIsCurrent runs the pinned generator on the contract, with
// the checked-in settings, and emptyquery after it, into a temporary directory, and fails when its
// output differs from client.gen.go in any byte: the contract and the client
// never drift apart.
func TestGeneratedClientIsCurrent(t *testing.T) {
	t.Parallel()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to run the generator: %v", err)
	}
	cfg, err := os.ReadFile("oapi-codegen.yaml")
	if err != nil {
		t.Fatal(err)
	}
	output := regexp.MustCompile(`(?m)^output: client\.gen\.go$`)
	if !output.Match(cfg) {
		t.Fatal("oapi-codegen.yaml no longer says `output: client.gen.go`; update this test")
	}
	dir := t.TempDir()
	fresh := filepath.Join(dir, "client.gen.go")
	tmpCfg := filepath.Join(dir, "oapi-codegen.yaml")
	if err := os.WriteFile(tmpCfg, output.ReplaceAll(cfg, []byte("output: "+fresh)), 0o600); err != nil {
		t.Fatal(err)
	}
	// The same commands as the go:generate lines of generate.go, but for the
	// output file.
	for _, args := range [][]string{
		{"tool", "oapi-codegen", "-config", tmpCfg, "../../api/openapi.yaml"},
		{"run", "./internal/emptyquery", fresh},
	} {
		if out, err := exec.Command(goCmd, args...).CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", args[0], err, out)
		}
	}
	want, err := os.ReadFile(fresh)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("client.gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		line := 1 + bytes.Count(got[:commonPrefix(got, want)], []byte("\n"))
		t.Fatalf("pkg/client/client.gen.go is not what api/openapi.yaml generates (first difference on line %d); "+
			"run `go generate ./pkg/client` and commit the result", line)
	}
}

func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
