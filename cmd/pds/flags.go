package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"
)

// commonFlagsOn declares the flags every command with a database shares.
func commonFlagsOn(fs *pflag.FlagSet) *commonFlags {
	c := &commonFlags{}
	fs.StringVar(&c.database, "database", "pds.db", "SQLite file path, or a postgres:// URL")
	fs.StringVar(&c.direct, "database-direct", "", "PostgreSQL only, optional: a postgres:// URL reaching the same database as --database "+
		"without a pooler, for what wants a session of its own: the migrations, and the key cache's notifications")
	jsonFlag(fs, &c.json, "machine-readable output: one JSON object")
	fs.StringVar(&c.secretsKeyFile, "secrets-key-file", "", "a file, kept outside the database, holding the key (32 bytes as 64 hexadecimal "+
		"characters, as openssl rand -hex 32 prints) that seals the webhook signing secrets and suppression secrets in the database; "+
		"further lines: earlier keys, which only open (see pds secrets rotate-key). Without it they are stored in clear")
	return c
}

// replicaFlagOn declares --database-replica on fs, for the commands whose
// reads a replica may serve (pds serve, pds persons report).
func replicaFlagOn(fs *pflag.FlagSet, c *commonFlags) {
	fs.Var(&c.replicas, "database-replica", "PostgreSQL only, optional, repeatable: a postgres:// URL of a streaming standby of --database "+
		"(directly or through a pooler of its own) that serves the reads safe on a replica, each once it has replayed every write "+
		"acknowledged before the request arrived; down or behind, the primary serves them. "+
		envName("database-replica")+" takes several, separated by spaces")
}

// urlList is a repeatable flag of URLs; a value holding several separated
// by white space (its environment variable's) adds each.
type urlList []string

func (l *urlList) String() string { return strings.Join(*l, " ") }

func (l *urlList) Set(v string) error {
	*l = append(*l, strings.Fields(v)...)
	return nil
}

func (l *urlList) Type() string { return "url" }

// jsonFlag declares --json.
func jsonFlag(fs *pflag.FlagSet, v *bool, usage string) { fs.BoolVar(v, "json", false, usage) }

type commonFlags struct {
	database string
	// direct is --database-direct: the database without the pooler
	// --database may name ("" for none).
	direct string
	json   bool
	// secretsKeyFile is --secrets-key-file ("" for none).
	secretsKeyFile string
	// replicas are --database-replica, for the commands that declare it
	// (replicaFlagOn).
	replicas urlList
}

// envName is the environment variable of a flag: PDS_ and its name in
// capitals, dashes as underscores, but for the few whose variable says
// more (envNames).
func envName(flag string) string {
	if name, ok := envNames[flag]; ok {
		return name
	}
	return "PDS_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// envNames are the variables that are not their flag's name: a URL's
// variable says so, as DATABASE_URL-style variables do.
var envNames = map[string]string{"database-direct": "PDS_DATABASE_DIRECT_URL", "database-replica": "PDS_DATABASE_REPLICA_URLS"}

// usageError is a command line or setting the user must correct; pds
// exits with status 2 on one, as command-line tools do, and 1 on any other
// failure.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// printJSON writes v as one JSON object.
func (e cmdEnv) printJSON(v any) error {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table writes rows aligned in columns.
func (e cmdEnv) table(header string, rows [][]string) {
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}

// plural is n and the noun that fits it: "1 migration", "2 migrations".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
