package main

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// defineFunc declares a command's flags on fs and returns what the command
// does once they are set (command line, then PDS_* variables for the rest),
// with its positional arguments.
type defineFunc func(fs *pflag.FlagSet) func(args []string) error

// leaf is a command that runs.
func (e cmdEnv) leaf(use, short, long string, args cobra.PositionalArgs, define defineFunc) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short, Long: long, Args: usageArgs(args)}
	fs := cmd.Flags()
	fs.SortFlags = false
	run := define(fs)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := applyEnv(fs); err != nil {
			return err
		}
		*e.ran = true
		return run(args)
	}
	return cmd
}

// group is a command that holds others: pds keys, pds import. It runs none
// itself; "pds keys help" is its help, as "pds help keys" and "pds keys
// --help" are. It reads no flags of its own, so that a command line naming
// a command it lacks is refused as such, whatever flags follow.
func (e cmdEnv) group(use, short string, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short, Args: cobra.ArbitraryArgs, DisableFlagParsing: true}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		for _, a := range args {
			switch {
			case a == "-h" || a == "--help":
				return cmd.Help()
			case !strings.HasPrefix(a, "-"):
				return usageError{fmt.Errorf("%s: unknown command %q; say %s (pds %s --help)", cmdName(cmd), a, subNames(cmd), cmdName(cmd))}
			}
		}
		return usageError{fmt.Errorf("%s: say %s (pds %s --help)", cmdName(cmd), subNames(cmd), cmdName(cmd))}
	}
	cmd.AddCommand(subs...)
	cmd.AddCommand(&cobra.Command{Use: "help", Short: "print this help", Hidden: true, Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			cmd.InitDefaultHelpFlag() // as pds help keys has it
			return cmd.Help()
		}})
	return cmd
}

// subNames lists the commands of a group: "create, list or revoke".
func subNames(cmd *cobra.Command) string {
	var names []string
	for _, s := range cmd.Commands() {
		if !s.Hidden && s.Name() != "help" {
			names = append(names, s.Name())
		}
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// usageArgs makes a complaint about the positional arguments a usage
// error (exit status 2).
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	if check == nil {
		check = noArgs
	}
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return usageError{fmt.Errorf("%s: %w (pds %s --help)", cmdName(cmd), err, cmdName(cmd))}
		}
		return nil
	}
}

// noArgs takes no positional argument.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("unexpected argument %q", args[0])
	}
	return nil
}

// exactlyOne takes one positional argument, named what.
func exactlyOne(what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != 1 {
			return fmt.Errorf("give exactly one %s, got %d", what, len(args))
		}
		return nil
	}
}

// pflagInvalid is how pflag reports a value it cannot parse.
var pflagInvalid = regexp.MustCompile(`^invalid argument "(.*)" for "(?:-\w, )?--([\w-]+)" flag: `)

// flagError turns pflag's complaint about a flag into the user's words:
// a value that does not parse names the flag, its variable and an example
// (badSetting); an unknown flag says where the flags are listed.
func flagError(cmd *cobra.Command, err error) error {
	if m := pflagInvalid.FindStringSubmatch(err.Error()); m != nil {
		if f := cmd.Flags().Lookup(m[2]); f != nil {
			return badSetting(f.Name, m[1], kindOf(f))
		}
	}
	return usageError{fmt.Errorf("%s: %w (pds %s --help lists its flags)", cmdName(cmd), err, cmdName(cmd))}
}

// cmdName is a command's path without "pds", as messages name it.
func cmdName(cmd *cobra.Command) string {
	if !cmd.HasParent() {
		return ""
	}
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
}
