package main

import "github.com/spf13/pflag"

// parse reads args as a command does: the command line, then the PDS_*
// variables of the flags it left unset.
func parse(fs *pflag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	return applyEnv(fs)
}
