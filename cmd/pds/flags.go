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
	fs.BoolVar(&c.json, "json", false, "machine-readable output: one JSON object")
	return fs, c
}

type commonFlags struct {
	database string
	json     bool
}

// envName is the environment variable of a flag: PDS_ and its name in
// capitals, dashes as underscores.
func envName(flag string) string {
	return "PDS_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

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
