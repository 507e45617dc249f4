package main

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/pds-dev/pds/internal/store/postgres"
)

// settingExamples holds a valid value of every flag, for the errors that
// refuse an invalid one.
var settingExamples = map[string]string{
	"database":                         "pds.db (an SQLite file) or postgres://user@host:5432/pds",
	"database-direct":                  "postgres://user@db-host:5432/pds (the server itself, when --database names a pooler)",
	"database-replica":                 "postgres://user@replica-host:5432/pds (a streaming standby of --database; repeat for each)",
	"json":                             "true",
	"secrets-key-file":                 "/etc/pds/secrets.key (made with: openssl rand -hex 32 > /etc/pds/secrets.key; chmod 600 /etc/pds/secrets.key)",
	"addr":                             "localhost:8080 (this machine alone), or :8080 for every interface",
	"public-url":                       "https://pds.example.com",
	"rate-limit":                       "600",
	"custom-field-limit":               "100",
	"webhook-window":                   "5m",
	"webhook-retry-schedule":           "0s,5s,5m,30m,2h",
	"webhook-timeout":                  "15s",
	"webhook-disable-after":            "120h",
	"webhook-allow-private":            "true",
	"webhook-ca-file":                  "/etc/pds/receivers-ca.pem",
	"webhook-retention":                "720h",
	"webhook-concurrency":              "64",
	"webhook-subscription-concurrency": "4",
	"metrics-addr":                     "127.0.0.1:9090",
	"pprof-addr":                       "127.0.0.1:6060",
	"shutdown-grace":                   "30s",
	"shutdown-drain":                   "5s (or 0s to stop accepting at once)",
	"database-timeout":                 "4s",
	"tls-cert":                         "/etc/pds/cert.pem",
	"tls-key":                          "/etc/pds/key.pem",
	"migrate":                          "false (with pds migrate run first, as a deploy step)",
	"client-address-header":            "X-Forwarded-For",
	"change-retention":                 "720h (30 days)",
	"account":                          "acc_01a209d69f8a9aba61380d0e",
	"scopes":                           "persons:read,persons:write (or all)",
	"name":                             "crm-sync",
	"expires-in":                       "720h",
	"events":                           "person.created,person.updated",
	"forward-to":                       "http://localhost:3000/hook",
	"signature-scheme":                 "standard-webhooks",
	"port":                             "4000 (or 0 for any free port)",
	"print-body":                       "true",
	"valid":                            "10m",
	"session":                          "8h",
}

// badSetting refuses value of flag in the user's words: the flag, its
// environment variable, the value given, why, and a valid example.
func badSetting(flag, value, reason string) error {
	msg := fmt.Sprintf("--%s (%s) %q: %s", flag, envName(flag), value, reason)
	if ex := settingExamples[flag]; ex != "" {
		msg += "; e.g. --" + flag + " " + ex
	}
	return usageError{errors.New(msg)}
}

// applyEnv sets every flag the command line left unset from its PDS_*
// variable, so that flags win. A value that does not parse is refused by
// badSetting.
func applyEnv(fs *pflag.FlagSet) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		// An empty variable counts as unset, as shells and container
		// environments often leave them.
		v := os.Getenv(envName(f.Name))
		if f.Changed || v == "" || err != nil {
			return
		}
		if serr := fs.Set(f.Name, v); serr != nil {
			err = badSetting(f.Name, v, kindOf(f))
		}
	})
	return err
}

// kindOf says what a flag's value must be, from its type.
func kindOf(f *pflag.Flag) string {
	switch f.Value.Type() {
	case "duration":
		return "not a duration (a number and a unit: ms, s, m or h)"
	case "int", "int64", "uint", "uint64":
		return "not a whole number"
	case "bool":
		return "not true or false"
	case "float64":
		return "not a number"
	}
	return "not a valid value"
}

// positive refuses a number below 1 for flag.
func positive(flag string, n int) error {
	if n < 1 {
		return badSetting(flag, fmt.Sprint(n), "must be 1 or more")
	}
	return nil
}

// atLeastASecond refuses a duration under a second for flag.
func atLeastASecond(flag string, d time.Duration) error {
	if d < time.Second {
		return badSetting(flag, d.String(), "must be 1s or more")
	}
	return nil
}

// positiveDuration refuses a duration of zero or less for flag.
func positiveDuration(flag string, d time.Duration) error {
	if d <= 0 {
		return badSetting(flag, d.String(), "must be longer than zero")
	}
	return nil
}

// headerName is what RFC 9110 allows in a field name.
var headerName = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")

// checkHeaderName refuses a value of flag that cannot name a header ("" is
// no header).
func checkHeaderName(flag, name string) error {
	if name != "" && !headerName.MatchString(name) {
		return badSetting(flag, name, "not a header name")
	}
	return nil
}

// checkDatabase refuses a --database that is neither an SQLite file path
// nor a postgres:// URL, before anything opens it: a URL of another scheme
// would otherwise become a file of that name.
// checkDatabases checks --database and --database-direct, which names a
// PostgreSQL database beside a PostgreSQL --database only.
func checkDatabases(c *commonFlags) error {
	if err := checkDatabase(c.database); err != nil {
		return err
	}
	if err := checkReplicas(c); err != nil || c.direct == "" {
		return err
	}
	if !isPostgres(c.database) {
		return badSetting("database-direct", redact(c.direct), "--database names an SQLite file, which has no pooler to go around")
	}
	if !isPostgres(c.direct) {
		return badSetting("database-direct", redact(c.direct), "not a postgres:// URL")
	}
	if err := postgres.CheckURL(c.direct); err != nil {
		return badSetting("database-direct", redact(c.direct), strings.TrimPrefix(err.Error(), "postgres: "))
	}
	return nil
}

// checkReplicas checks --database-replica, which names PostgreSQL standbys
// beside a PostgreSQL --database only.
func checkReplicas(c *commonFlags) error {
	for _, url := range c.replicas {
		switch {
		case !isPostgres(c.database):
			return badSetting("database-replica", redact(url), "--database names an SQLite file, which has no replicas")
		case !isPostgres(url):
			return badSetting("database-replica", redact(url), "not a postgres:// URL")
		}
		if err := postgres.CheckURL(url); err != nil {
			return badSetting("database-replica", redact(url), strings.TrimPrefix(err.Error(), "postgres: "))
		}
	}
	return nil
}

func checkDatabase(database string) error { return checkDatabaseFlag("database", database) }

// checkDatabaseFlag is checkDatabase for a flag of another name (pds
// transfer's --from and --to).
func checkDatabaseFlag(flag, database string) error {
	if database == "" {
		return badSetting(flag, database, "empty")
	}
	scheme, _, isURL := strings.Cut(database, "://")
	if !isURL {
		return nil
	}
	if !isPostgres(database) {
		return badSetting(flag, redact(database), fmt.Sprintf("unknown scheme %q: pds speaks SQLite (a file path) and PostgreSQL (postgres://)", scheme))
	}
	if err := postgres.CheckURL(database); err != nil {
		return badSetting(flag, redact(database), strings.TrimPrefix(err.Error(), "postgres: "))
	}
	return nil
}

// redact hides a password in a database URL that is about to be printed.
func redact(database string) string {
	u, err := url.Parse(database)
	if err != nil || u.User == nil {
		if i, j := strings.Index(database, "://"), strings.LastIndex(database, "@"); i >= 0 && j > i {
			if user, _, hasPassword := strings.Cut(database[i+3:j], ":"); hasPassword {
				return database[:i+3] + user + ":xxxxx" + database[j:]
			}
		}
		return database
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}
