package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
)

// newFlags makes a flag set with the flags every command shares.
func (e cmdEnv) newFlags(name string) (*flag.FlagSet, *commonFlags) {
	fs := flag.NewFlagSet("pds "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	c := &commonFlags{}
	fs.StringVar(&c.database, "database", "pds.db", "SQLite file path, or a postgres:// URL")
	fs.StringVar(&c.direct, "database-direct", "", "PostgreSQL only, optional: a postgres:// URL reaching the same database as --database "+
		"without a pooler, for what wants a session of its own: the migrations, and the key cache's notifications")
	fs.BoolVar(&c.json, "json", false, "machine-readable output: one JSON object")
	fs.StringVar(&c.secretsKeyFile, "secrets-key-file", "", "a file, kept outside the database, holding the key (32 bytes as 64 hexadecimal "+
		"characters, as openssl rand -hex 32 prints) that seals the webhook signing secrets and suppression secrets in the database; "+
		"further lines: earlier keys, which only open (see pds secrets rotate-key). Without it they are stored in clear")
	return fs, c
}

type commonFlags struct {
	database string
	// direct is --database-direct: the database without the pooler
	// --database may name ("" for none).
	direct string
	json   bool
	// secretsKeyFile is --secrets-key-file ("" for none).
	secretsKeyFile string
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
var envNames = map[string]string{"database-direct": "PDS_DATABASE_DIRECT_URL"}

// usageError is a command line or setting the user must correct; pds
// exits with status 2 on one, as command-line tools do, and 1 on any other
// failure.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// flagsFirst moves flags ahead of positional arguments, so that
// "pds keys revoke KEY_ID --json" reads like "pds keys revoke --json KEY_ID";
// the flag package alone stops at the first positional argument.
func flagsFirst(fs *flag.FlagSet, args []string) []string {
	var flags, positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			positional = append(positional, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			positional = append(positional, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		f := fs.Lookup(name)
		if f == nil {
			continue // the flag package reports it
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			continue
		}
		if i+1 < len(args) {
			i++
			flags = append(flags, args[i])
		}
	}
	return append(append(flags, "--"), positional...)
}

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
