// Command pds serves the Public Data Service API and carries its
// administrative commands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

const usage = `pds: the Public Data Service

Usage:
  pds serve [flags]                       serve the API (SQLite file pds.db by default); with --migrate=false
                                          it never changes the schema and refuses to start while migrations are pending
  pds migrate [--database D]              apply database migrations (a deploy's own step, before servers roll)
  pds healthcheck [--addr A]              exit 0 when pds serve on this machine answers /readyz with 200, else 1
                                          (the image's HEALTHCHECK; reads PDS_ADDR and PDS_TLS_CERT as serve does)
  pds accounts create --name N            create an account
  pds accounts list                       list accounts
  pds keys create --account ID --scopes a,b|all [--name N] [--expires-in D] [--rate-limit N]
  pds keys list --account ID              list an account's keys (never their secrets)
  pds keys revoke KEY_ID                  revoke a key, effective on the next request
  pds erasures list --account ID          the account's erasures (DELETE /persons/{id}): when, which key,
                                          the person's id, whether suppressed; never an identifier
  pds import campaigns|projects|custom-fields --account ID FILE   (JSON lines; - reads stdin)
  pds import persons --account ID FILE                         upsert persons: Upsert Person lines + tag_ids
  pds backup FILE                         copy a live SQLite database to a new FILE, checked (PostgreSQL: pg_dump)
  pds console link --account ID           print a one-time sign-in link to the console (/console)
  pds persons report --account ID --person ID
                                          print everything held about a person as one JSON document
                                          (an access request), streamed page by page
  pds secrets rotate-key --secrets-key-file F
                                          seal every webhook signing secret and suppression secret again under
                                          the first key of F (opened with any key F holds; see the README)
  pds webhooks listen --account ID [--events E,E] [--print-body] [--forward-to URL] [--port N]
                                          receive the account's deliveries here (http://127.0.0.1) while it runs,
                                          verified and printed, from pds serve on this machine and database

Every command takes --json, and every one but healthcheck --database (PDS_DATABASE) and --secrets-key-file
(PDS_SECRETS_KEY_FILE). Run "pds COMMAND -h" for its flags.
`

func main() {
	ctx := onSignals(os.Stderr)
	if err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		var logged loggedError
		if !errors.Is(err, flag.ErrHelp) && !errors.As(err, &logged) {
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

// exitStatus is 0 after -h, 2 for a usage error (a bad command line or
// setting), 1 for any other failure.
func exitStatus(err error) int {
	var usage usageError
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &usage):
		return 2
	}
	return 1
}

// run dispatches a command line; tests call it directly.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return usageError{errors.New("no command given")}
	}
	env := cmdEnv{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr}
	switch args[0] {
	case "serve":
		return env.serve(args[1:])
	case "migrate":
		return env.migrate(args[1:])
	case "accounts":
		return env.accounts(args[1:])
	case "keys":
		return env.keys(args[1:])
	case "erasures":
		return env.erasures(args[1:])
	case "import":
		return env.importCmd(args[1:])
	case "backup":
		return env.backup(args[1:])
	case "webhooks":
		return env.webhooksCmd(args[1:])
	case "console":
		return env.consoleCmd(args[1:])
	case "persons":
		return env.personsCmd(args[1:])
	case "healthcheck":
		return env.healthcheck(args[1:])
	case "secrets":
		return env.secretsCmd(args[1:])
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return usageError{fmt.Errorf("unknown command %q", args[0])}
}

type cmdEnv struct {
	ctx            context.Context
	stdin          io.Reader
	stdout, stderr io.Writer
}
