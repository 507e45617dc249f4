package main

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHealthcheck: exit 0 while pds serve is ready, 1 once it has stopped.
func TestHealthcheck(t *testing.T) {
	t.Parallel()
	db := t.TempDir() + "/pds.db"
	var addr string
	serveOnce(t, db, func(base, _ string) {
		addr = strings.TrimPrefix(base, "http://")
		if out, err := pds(t, "healthcheck", "--addr", addr); err != nil || out != "ready\n" {
			t.Errorf("healthcheck of a ready server: %v %q", err, out)
		}
		var got struct {
			URL    string
			Ready  bool
			Status int
		}
		pdsJSON(t, &got, "healthcheck", "--addr", addr)
		if got.URL != base+"/readyz" || !got.Ready || got.Status != 200 {
			t.Errorf("healthcheck --json: %+v", got)
		}
	})
	if out, err := pds(t, "healthcheck", "--addr", addr); exitStatus(err) != 1 {
		t.Errorf("healthcheck once the server stopped: %v (exit %d) %s", err, exitStatus(err), out)
	}
}

// TestHealthcheckAnswers: only a 200 is healthy; with --tls-cert the check
// speaks HTTPS, whatever the certificate names.
func TestHealthcheckAnswers(t *testing.T) {
	t.Parallel()
	readyz := func(status int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/readyz" {
				status = http.StatusNotFound
			}
			w.WriteHeader(status)
		}
	}
	draining := httptest.NewServer(readyz(http.StatusServiceUnavailable))
	defer draining.Close()
	if _, err := pds(t, "healthcheck", "--addr", draining.Listener.Addr().String()); exitStatus(err) != 1 || !strings.Contains(err.Error(), "answered 503") {
		t.Errorf("a 503: %v (exit %d)", err, exitStatus(err))
	}
	overTLS := httptest.NewUnstartedServer(readyz(http.StatusOK))
	overTLS.Config.ErrorLog = log.New(io.Discard, "", 0) // the plain request below is refused, as it should be
	overTLS.StartTLS()
	defer overTLS.Close()
	addr := overTLS.Listener.Addr().String()
	if out, err := pds(t, "healthcheck", "--addr", addr, "--tls-cert", "/etc/pds/cert.pem"); err != nil {
		t.Errorf("over HTTPS: %v %s", err, out)
	}
	if _, err := pds(t, "healthcheck", "--addr", addr); exitStatus(err) != 1 {
		t.Errorf("plain HTTP to an HTTPS server: %v, want exit 1", err)
	}
}

// TestHealthcheckAddr: the check asks the address pds serve listens on, as
// seen from the same machine.
func TestHealthcheckAddr(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]string{
		":8080":           "http://127.0.0.1:8080/readyz",
		"0.0.0.0:9000":    "http://127.0.0.1:9000/readyz",
		"[::]:8080":       "http://127.0.0.1:8080/readyz",
		"localhost:8080":  "http://127.0.0.1:8080/readyz",
		"10.0.0.7:8080":   "http://10.0.0.7:8080/readyz",
		"[::1]:8080":      "http://[::1]:8080/readyz",
		"127.0.0.1:https": "http://127.0.0.1:443/readyz",
	} {
		if got, err := readyzURL(addr, false); err != nil || got != want {
			t.Errorf("--addr %s: %q %v, want %q", addr, got, err, want)
		}
	}
	for _, bad := range []string{"8080", ":0", "127.0.0.1:nope"} {
		if _, err := pds(t, "healthcheck", "--addr", bad); exitStatus(err) != 2 || !strings.Contains(err.Error(), "PDS_ADDR") {
			t.Errorf("--addr %s: %v, want a usage error naming PDS_ADDR", bad, err)
		}
	}
}

// TestHealthcheckReadsTheServersVariables sets PDS_ADDR, so it is not
// parallel.
func TestHealthcheckReadsTheServersVariables(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	t.Setenv("PDS_ADDR", srv.Listener.Addr().String())
	if out, err := pds(t, "healthcheck"); err != nil {
		t.Fatalf("healthcheck with PDS_ADDR: %v %s", err, out)
	}
	t.Setenv("PDS_TLS_CERT", "/etc/pds/cert.pem")
	if _, err := pds(t, "healthcheck"); exitStatus(err) != 1 {
		t.Fatalf("healthcheck with PDS_TLS_CERT against plain HTTP: %v, want exit 1", err)
	}
}
