package main

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/pflag"
)

// buildVersion is what the binary says it is: its module version and the
// commit it was built from, as the go command recorded them.
type buildVersion struct {
	Version    string `json:"version"`
	Commit     string `json:"commit,omitempty"`
	CommitTime string `json:"commit_time,omitempty"`
	Modified   bool   `json:"modified"`
	Go         string `json:"go"`
}

func version() buildVersion {
	v := buildVersion{Version: "(devel)"}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	v.Go = info.GoVersion
	if info.Main.Version != "" {
		v.Version = info.Main.Version
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.CommitTime = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func (v buildVersion) String() string {
	var b strings.Builder
	b.WriteString(v.Version)
	if v.Commit != "" {
		fmt.Fprintf(&b, " (commit %s", v.Commit)
		if v.CommitTime != "" {
			b.WriteString(" of " + v.CommitTime)
		}
		if v.Modified {
			b.WriteString(", with uncommitted changes")
		}
		b.WriteString(")")
	}
	if v.Go != "" {
		b.WriteString(", built with " + v.Go)
	}
	return b.String()
}

// versionCmd prints what the binary is.
func (e cmdEnv) versionCmd(fs *pflag.FlagSet) func([]string) error {
	var asJSON bool
	jsonFlag(fs, &asJSON, "machine-readable output: one JSON object")
	return func([]string) error {
		if asJSON {
			return e.printJSON(version())
		}
		fmt.Fprintln(e.stdout, "pds", version())
		return nil
	}
}
