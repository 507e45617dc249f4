package main

import (
	"crypto/x509"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// rootsChildEnv marks the process TestRootsWithoutSystemBundle runs with
// the system bundle out of reach: the roots load once per process.
const rootsChildEnv = "PDS_TEST_ROOTS_CHILD"

// TestRootsWithoutSystemBundle: where the system has no CA bundle (a
// scratch image), the binary's roots verify every public root it carries,
// so HTTPS deliveries to public receivers work there.
func TestRootsWithoutSystemBundle(t *testing.T) {
	if os.Getenv(rootsChildEnv) == "" {
		t.Parallel()
		nowhere := filepath.Join(t.TempDir(), "none")
		cmd := exec.Command(os.Args[0], "-test.run=^TestRootsWithoutSystemBundle$", "-test.count=1")
		cmd.Env = append(os.Environ(), rootsChildEnv+"=1", "SSL_CERT_FILE="+nowhere, "SSL_CERT_DIR="+nowhere)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("with no system bundle: %v\n%s", err, out)
		}
		return
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		t.Fatalf("no roots without a system bundle: %v", err)
	}
	n := 0
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue // trusted for some names only
		}
		cert, err := x509.ParseCertificate(root.Certificate)
		if err != nil {
			t.Fatal(err)
		}
		// At a time the root is valid: verifying today could trip on one
		// that expires before the bundle is updated.
		at := cert.NotBefore.Add(time.Hour)
		if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: at}); err != nil {
			t.Errorf("%s: %v", cert.Subject, err)
		}
		n++
	}
	if n < 50 {
		t.Fatalf("only %d roots verified", n)
	}
}
