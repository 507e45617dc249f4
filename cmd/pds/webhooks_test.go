package main

import (
	"encoding/pem"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/pds-dev/pds/internal/webhook/webhooktest"
	"github.com/pds-dev/pds/pkg/webhookverify"
)

// TestServeRefusesBadWebhookSettings: a bad schedule, CA file or streak
// length stops the start, before any database is opened.
func TestServeRefusesBadWebhookSettings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--webhook-retry-schedule", "0s,5s,soon"}, `--webhook-retry-schedule (PDS_WEBHOOK_RETRY_SCHEDULE) "0s,5s,soon": "soon" is not a duration`},
		{[]string{"--webhook-retry-schedule", "0s,-5s"}, "negative"},
		{[]string{"--webhook-ca-file", filepath.Join(dir, "missing.pem")}, "--webhook-ca-file"},
		{[]string{"--webhook-ca-file", notPEM}, "no PEM certificate"},
		{[]string{"--webhook-disable-after", "0s"}, `--webhook-disable-after (PDS_WEBHOOK_DISABLE_AFTER) "0s": must be longer than zero`},
		{[]string{"--webhook-retention", "0s"}, `--webhook-retention (PDS_WEBHOOK_RETENTION) "0s": must be longer than zero`},
		{[]string{"--webhook-retention", "-24h"}, `--webhook-retention (PDS_WEBHOOK_RETENTION) "-24h0m0s": must be longer than zero`},
		{[]string{"--webhook-retention", "30d"}, `--webhook-retention (PDS_WEBHOOK_RETENTION) "30d": not a duration`},
	} {
		db := filepath.Join(dir, "pds.db")
		out, err := pds(t, append([]string{"serve", "--addr", "127.0.0.1:0", "--database", db}, c.flags...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v (%s), want an error containing %q", c.flags, err, out, c.want)
		}
		if _, statErr := os.Stat(db); statErr == nil {
			t.Fatalf("%v: the database was opened before the settings were checked", c.flags)
		}
	}
}

// TestWebhookRetentionSetting: --webhook-retention and
// PDS_WEBHOOK_RETENTION reach the worker's settings, default 30 days, the
// flag winning over the variable; a bad variable stops the start. It sets
// the variable, so it is not parallel.
func TestWebhookRetentionSetting(t *testing.T) {
	retention := func(args ...string) (time.Duration, error) {
		fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		fs.SetOutput(io.Discard)
		cfg := serveFlags(fs)
		if err := parse(fs, args); err != nil {
			return 0, err
		}
		s, err := webhookSettings(*cfg)
		return s.Retention, err
	}
	for _, c := range []struct {
		env  string
		args []string
		want time.Duration
	}{
		{"", nil, 720 * time.Hour},
		{"", []string{"--webhook-retention", "168h"}, 168 * time.Hour},
		{"90m", nil, 90 * time.Minute},
		{"90m", []string{"--webhook-retention=2160h"}, 2160 * time.Hour},
	} {
		if c.env != "" {
			t.Setenv("PDS_WEBHOOK_RETENTION", c.env)
		}
		if got, err := retention(c.args...); err != nil || got != c.want {
			t.Errorf("PDS_WEBHOOK_RETENTION=%q %v: %v, %v; want %v", c.env, c.args, got, err, c.want)
		}
	}
	for env, want := range map[string]string{"a month": "PDS_WEBHOOK_RETENTION", "0s": `--webhook-retention (PDS_WEBHOOK_RETENTION) "0s": must be longer than zero`} {
		t.Setenv("PDS_WEBHOOK_RETENTION", env)
		if _, err := retention(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("PDS_WEBHOOK_RETENTION=%q: %v, want an error containing %q", env, err, want)
		}
	}
	t.Setenv("PDS_WEBHOOK_RETENTION", "") // empty counts as unset; a bad value would stop -h
	out, err := pds(t, "serve", "-h")
	if err != nil {
		t.Errorf("pds serve -h: %v, want help and success", err)
	}
	if !strings.Contains(out, "--webhook-retention") || !strings.Contains(out, "30 days") {
		t.Errorf("pds serve -h does not document --webhook-retention:\n%s", out)
	}
}

// TestServeDeliversWebhooks: the server's own worker delivers a person
// change to an HTTPS receiver trusted through --webhook-ca-file, on a
// localhost address allowed by --webhook-allow-private, with the real
// clock and a short window.
func TestServeDeliversWebhooks(t *testing.T) {
	t.Parallel()
	rc := webhooktest.NewReceiver(t)
	caFile := filepath.Join(t.TempDir(), "receiver.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rc.Server.Certificate().Raw})
	if err := os.WriteFile(caFile, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	var secret string
	serveOnce(t, filepath.Join(t.TempDir(), "pds.db"), func(base, key string) {
		call := apiCaller(t, base, key)
		hook := call("POST", "/webhooks", map[string]any{"name": "local", "target_url": rc.URL, "events": []string{"person.created"}}, 201)
		secret = hook["secret"].(string)
		call("POST", "/persons", map[string]any{"email": "ada@x.test"}, 201)
		deadline := time.Now().Add(30 * time.Second)
		for len(rc.Requests()) == 0 {
			if time.Now().After(deadline) {
				t.Fatal("no delivery within 30 s")
			}
			time.Sleep(50 * time.Millisecond)
		}
	}, "--webhook-allow-private", "--webhook-ca-file", caFile, "--webhook-window", "100ms")
	req := rc.Requests()[0]
	if err := webhookverify.Verify(req.Header, req.Body, []string{secret}, time.Now(), webhookverify.Options{}); err != nil {
		t.Fatalf("delivery does not verify: %v", err)
	}
	if !strings.Contains(string(req.Body), `"email":"ada@x.test"`) {
		t.Fatalf("body %s", req.Body)
	}
}
