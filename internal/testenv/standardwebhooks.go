package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// OfficialVerdict is what the official npm Standard Webhooks verifiers
// decided of one delivery: "ok", or "error: " and what they threw.
type OfficialVerdict struct {
	Name             string `json:"name"`
	Standardwebhooks string `json:"standardwebhooks"`
	Svix             string `json:"svix"`
}

// OfficialVerifiers has npm standardwebhooks and svix's Webhook, pinned in
// .ci/standardwebhooks, decide deliveries: vectors is a JSON array of
// {name, headers (name to values), body (base64), secrets, now (unix
// seconds)}, and the verdicts come back in its order. Without node or the
// installed packages the test skips, unless CI is set: .ci/run installs
// them, so under CI their absence is a failure.
func OfficialVerifiers(t testing.TB, vectors any) []OfficialVerdict {
	t.Helper()
	dir := filepath.Join(moduleRoot(t), ".ci", "standardwebhooks")
	missing := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set, and must check the official libraries, but "+format, args...)
		}
		t.Skipf(format, args...)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		missing("%s/node_modules is missing (npm ci --prefix %s installs it)", dir, dir)
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing("node is not on PATH")
	}
	in, err := json.Marshal(vectors)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(dir, "verify.mjs"))
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node verify.mjs: %v\n%s", err, stderr.String())
	}
	var verdicts []OfficialVerdict
	if err := json.Unmarshal(out, &verdicts); err != nil {
		t.Fatalf("verify.mjs printed what is not the expected JSON: %v\n%s", err, out)
	}
	return verdicts
}

// moduleRoot is the directory of the go.mod above the test's working
// directory.
func moduleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}
