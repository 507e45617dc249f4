package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pds-dev/pds/internal/testenv"
)

// TestBadSettingsInTheUsersWords: every bad setting is refused before
// anything is opened, with exit status 2, in one message that names the
// flag, its environment variable, the value given and a valid example.
func TestBadSettingsInTheUsersWords(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nowhere.pem")
	for _, tc := range []struct {
		name  string
		args  []string
		env   [2]string // a variable set for the case
		flag  string    // the flag the message must name
		given string    // the value it must quote
	}{
		{"unknown database scheme", []string{"serve", "--database", "mysql://root@db/pds"}, [2]string{}, "database", "mysql://root@db/pds"},
		{"malformed PostgreSQL URL", []string{"serve", "--database", "postgres://u@h:port/db"}, [2]string{}, "database", "postgres://u@h:port/db"},
		{"PostgreSQL URL setting pgx cannot read", []string{"migrate", "--database", "postgres://u@h/db?sslmode=sometimes"}, [2]string{}, "database", "postgres://u@h/db?sslmode=sometimes"},
		{"password never echoed", []string{"serve", "--database", "mysql://root:hunter2@db/pds"}, [2]string{}, "database", "mysql://root:xxxxx@db/pds"},
		{"replica beside an SQLite file", []string{"serve", "--database-replica", "postgres://u@replica/db"}, [2]string{}, "database-replica", "postgres://u@replica/db"},
		{"replica not a PostgreSQL URL", []string{"serve", "--database", "postgres://u@h/db", "--database-replica", "mysql://u@replica/db"}, [2]string{}, "database-replica", "mysql://u@replica/db"},
		{"second replica from the environment", []string{"persons", "report", "--account", "acc_x", "--person", "per_x", "--database", "postgres://u@h/db"},
			[2]string{"PDS_DATABASE_REPLICA_URLS", "postgres://u@r1/db postgres://u@r2:port/db"}, "database-replica", "postgres://u@r2:port/db"},
		{"malformed duration", []string{"serve", "--webhook-window", "5x"}, [2]string{}, "webhook-window", "5x"},
		{"malformed duration from the environment", []string{"serve"}, [2]string{"PDS_WEBHOOK_TIMEOUT", "15"}, "webhook-timeout", "15"},
		{"duration of zero", []string{"serve", "--shutdown-grace", "0s"}, [2]string{}, "shutdown-grace", "0s"},
		{"retry schedule", []string{"serve", "--webhook-retry-schedule", "0s,5s,soon"}, [2]string{}, "webhook-retry-schedule", "0s,5s,soon"},
		{"negative retry delay", []string{"serve", "--webhook-retry-schedule", "0s,-5s"}, [2]string{}, "webhook-retry-schedule", "0s,-5s"},
		{"missing CA file", []string{"serve", "--webhook-ca-file", missing}, [2]string{}, "webhook-ca-file", missing},
		{"missing TLS certificate", []string{"serve", "--tls-cert", missing, "--tls-key", missing}, [2]string{}, "tls-cert", missing},
		{"not a number", []string{"serve", "--rate-limit", "lots"}, [2]string{}, "rate-limit", "lots"},
		{"number out of range", []string{"serve", "--webhook-concurrency", "0"}, [2]string{}, "webhook-concurrency", "0"},
		{"number from the environment", []string{"serve"}, [2]string{"PDS_CUSTOM_FIELD_LIMIT", "ten"}, "custom-field-limit", "ten"},
		{"not a boolean", []string{"serve", "--webhook-allow-private=maybe"}, [2]string{}, "webhook-allow-private", "maybe"},
		{"migrate, from the environment", []string{"serve"}, [2]string{"PDS_MIGRATE", "no"}, "migrate", "no"},
		{"not a header name", []string{"serve", "--client-address-header", "X-Forwarded-For: 1.2.3.4"}, [2]string{}, "client-address-header", "X-Forwarded-For: 1.2.3.4"},
		{"not a header name from the environment", []string{"serve"}, [2]string{"PDS_CLIENT_ADDRESS_HEADER", "client ip"}, "client-address-header", "client ip"},
		{"import window", []string{"import", "persons", "--account", "acc_x", "--webhook-window", "-1m", "x.jsonl"}, [2]string{}, "webhook-window", "-1m0s"},
		{"key lifetime", []string{"keys", "create", "--account", "acc_x", "--scopes", "all", "--expires-in", "a month"}, [2]string{}, "expires-in", "a month"},
		{"key scopes", []string{"keys", "create", "--account", "acc_x", "--scopes", "persons:eat", "--database", filepath.Join(t.TempDir(), "k.db")}, [2]string{}, "scopes", "persons:eat"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env[0] != "" {
				t.Setenv(tc.env[0], tc.env[1])
			}
			dir := t.TempDir()
			args := tc.args
			if !strings.Contains(strings.Join(args, " "), "--database") {
				args = append(args[:len(args):len(args)], "--database", filepath.Join(dir, "pds.db"))
			}
			var out, errOut testenv.Buffer
			err := run(context.Background(), args, strings.NewReader(""), &out, &errOut)
			if err == nil {
				t.Fatal("accepted")
			}
			if got := exitStatus(err); got != 2 {
				t.Errorf("exit status %d, want 2 (%v)", got, err)
			}
			msg := err.Error()
			for _, want := range []string{"--" + tc.flag, envName(tc.flag), `"` + tc.given + `"`, "e.g. --" + tc.flag + " "} {
				if !strings.Contains(msg, want) {
					t.Errorf("%q does not say %s", msg, want)
				}
			}
			if strings.Contains(msg, "hunter2") {
				t.Errorf("%q shows the password", msg)
			}
			if out.String() != "" {
				t.Errorf("wrote to stdout: %s", out.String())
			}
			if filepath.Base(args[len(args)-1]) == "pds.db" {
				if matches, _ := filepath.Glob(filepath.Join(dir, "*")); len(matches) != 0 {
					t.Errorf("files made before the setting was refused: %v", matches)
				}
			}
		})
	}
}
