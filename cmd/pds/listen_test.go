package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/testenv"
)

func TestDefaultPublicURL(t *testing.T) {
	t.Parallel()
	bound := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 18080}
	for _, tc := range []struct {
		name, addr string
		tls        bool
		want       string
	}{
		{"every interface, by port alone", ":8080", false, "http://localhost:18080"},
		{"loopback", "127.0.0.1:18080", false, "http://127.0.0.1:18080"},
		{"a host name", "api.internal:18080", false, "http://api.internal:18080"},
		{"IPv4 unspecified", "0.0.0.0:18080", false, "http://localhost:18080"},
		{"IPv6 unspecified", "[::]:18080", false, "http://localhost:18080"},
		{"IPv6 loopback", "[::1]:18080", false, "http://[::1]:18080"},
		{"any free port: the one bound", "127.0.0.1:0", false, "http://127.0.0.1:18080"},
		{"TLS", ":8443", true, "https://localhost:18080"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := defaultPublicURL(tc.addr, bound, tc.tls); got != tc.want {
				t.Errorf("defaultPublicURL(%q, tls %v) = %q, want %q", tc.addr, tc.tls, got, tc.want)
			}
		})
	}
}

// TestServeTLS: with --tls-cert and --tls-key the server answers HTTPS on
// either engine, and its default public URL says https with the port bound.
func TestServeTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)

	for _, args := range [][]string{{"--tls-cert", certFile}, {"--tls-key", keyFile}} {
		err := run(context.Background(), append([]string{"serve", "--database", filepath.Join(dir, "half.db")}, args...),
			strings.NewReader(""), &testenv.Buffer{}, &testenv.Buffer{})
		if err == nil || exitStatus(err) != 2 || !strings.Contains(err.Error(), "go together") {
			t.Errorf("serve %v: %v (exit %d), want a usage error saying both are needed", args, err, exitStatus(err))
		}
	}

	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var out, errOut testenv.Buffer
		done := make(chan error, 1)
		database := eng.NewDatabase(t)
		go func() {
			done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--tls-cert", certFile, "--tls-key", keyFile,
				"--database", database}, strings.NewReader(""), &out, &errOut)
		}()
		var serving struct {
			Addr      string `json:"addr"`
			PublicURL string `json:"public_url"`
			TLS       bool   `json:"tls"`
		}
		for deadline := time.Now().Add(30 * time.Second); serving.Addr == ""; time.Sleep(10 * time.Millisecond) {
			for _, line := range strings.Split(errOut.String(), "\n") {
				if strings.Contains(line, `"msg":"serving"`) {
					if err := json.Unmarshal([]byte(line), &serving); err != nil {
						t.Fatal(err)
					}
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("server did not come up:\n%s", errOut.String())
			}
		}
		if want := "https://" + serving.Addr; serving.PublicURL != want || !serving.TLS {
			t.Errorf("serving %+v, want public_url %s and tls", serving, want)
		}
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		key := ""
		for _, f := range strings.Fields(out.String()) {
			if strings.HasPrefix(f, "pds_") {
				key = f // the key on a line of its own, before the curl hint
				break
			}
		}
		req, _ := http.NewRequest("GET", serving.PublicURL+"/me", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK || res.TLS == nil {
			t.Fatalf("GET /me over HTTPS: %d, TLS %v", res.StatusCode, res.TLS != nil)
		}
		if !strings.Contains(out.String(), serving.PublicURL+"/me") {
			t.Errorf("the first-start hint does not point at %s/me:\n%s", serving.PublicURL, out.String())
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// selfSigned writes a certificate for 127.0.0.1 and its key into dir and
// returns their paths and a pool that trusts the certificate.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "pds test"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	for file, block := range map[string]*pem.Block{certFile: {Type: "CERTIFICATE", Bytes: der}, keyFile: {Type: "EC PRIVATE KEY", Bytes: keyDER}} {
		if err := os.WriteFile(file, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// TestDefaultAddrIsLoopback: pds serve's default address is this
// machine's loopback interfaces alone, on one port; a taken address is
// answered with another to try.
func TestDefaultAddrIsLoopback(t *testing.T) {
	if host, _, _ := net.SplitHostPort(defaultAddr); host != "localhost" {
		t.Fatalf("default --addr %q", defaultAddr)
	}
	lns, err := listenAPI("localhost:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	port := lns[0].Addr().(*net.TCPAddr).Port
	for _, ln := range lns {
		a := ln.Addr().(*net.TCPAddr)
		if !a.IP.IsLoopback() || a.Port != port {
			t.Errorf("listening on %s, want loopback on port %d", a, port)
		}
	}
	taken := lns[0].Addr().String()
	if _, err := listenAPI(taken); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("127.0.0.1:%d (or 127.0.0.1:0 for any free port)", port+1)) {
		t.Errorf("a taken address: %v, want the next port suggested", err)
	}
}
