package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeRefusesBadWebhookSettings: a bad schedule, CA file or streak
// length stops the start, before any database is opened.
func TestServeRefusesBadWebhookSettings(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--webhook-retry-schedule", "0s,5s,soon"}, `--webhook-retry-schedule: "soon" is not a duration`},
		{[]string{"--webhook-retry-schedule", "0s,-5s"}, "negative"},
		{[]string{"--webhook-ca-file", filepath.Join(dir, "missing.pem")}, "--webhook-ca-file"},
		{[]string{"--webhook-ca-file", notPEM}, "no PEM certificate"},
		{[]string{"--webhook-disable-after", "0s"}, "--webhook-disable-after must be positive"},
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
