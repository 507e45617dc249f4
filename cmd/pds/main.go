package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx := onSignals(os.Stderr)
	if err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		var logged loggedError
		if !errors.As(err, &logged) {
			fmt.Fprintln(os.Stderr, "pds:", err)
		}
		os.Exit(exitStatus(err))
	}
}

// signalError is the cause of a context ended by a signal.
type signalError struct{ signal os.Signal }

func (e signalError) Error() string { return "stopped by " + e.signal.String() }

// signalName names the signal behind a context's cause, "" for none.
func signalName(cause error) string {
	var sig signalError
	if errors.As(cause, &sig) {
		return sig.signal.String()
	}
	return ""
}

// onSignals returns a context that the first SIGINT or SIGTERM ends, with
// a signalError as its cause, so that a command stops in order (pds serve
// drains and finishes what is in flight). A second signal stops the
// process at once: whoever sends it does not want to wait, and nothing
// acknowledged is lost by stopping (every write commits before its answer).
func onSignals(stderr io.Writer) context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		cancel(signalError{sig})
		sig = <-sigs
		slog.New(slog.NewJSONHandler(stderr, nil)).Warn("second signal: stopping at once", "signal", sig.String())
		os.Exit(1)
	}()
	return ctx
}

// exitStatus is 2 for a usage error (a bad command line or setting), 1
// for any other failure.
func exitStatus(err error) int {
	var usage usageError
	if errors.As(err, &usage) {
		return 2
	}
	return 1
}

// run runs a command line; tests call it directly. Help (pds help, -h,
// --help on any command) goes to stdout and succeeds.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	ran := false
	env := cmdEnv{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr, ran: &ran}
	root := env.root()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if len(args) == 0 {
		_ = root.Help()
		return usageError{errors.New("no command given")}
	}
	cmd, err := root.ExecuteC()
	var usage usageError
	if err != nil && !ran && !errors.As(err, &usage) {
		// cobra's own complaint about the command line.
		name := cmdName(cmd)
		if name != "" {
			name += " "
		}
		err = usageError{fmt.Errorf("%w (pds %s--help lists what there is)", err, name)}
	}
	return err
}

type cmdEnv struct {
	ctx            context.Context
	stdin          io.Reader
	stdout, stderr io.Writer
	// ran is set once a command's own work starts: an error before it is
	// the command line's.
	ran *bool
}
