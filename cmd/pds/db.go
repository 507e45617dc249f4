package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/secrets"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/store/engines"
	"github.com/pds-dev/pds/internal/store/postgres"
	"github.com/pds-dev/pds/internal/store/schema"
	"github.com/pds-dev/pds/internal/store/sqlite"
)

func isPostgres(database string) bool { return engines.IsPostgres(database) }

// openStore opens the engine the --database value names, migrating it.
func openStore(ctx context.Context, c *commonFlags) (store.Store, error) {
	return openServingStore(ctx, c, true, nil)
}

// openServingStore is openStore for a server, which may be told not to
// migrate: without migrate it changes no schema and refuses a database
// that lacks a migration (--migrate=false). Its requests' deadlines end
// their statements on the server too (postgres.connConfig); SQLite's busy
// waits already end with each call's context. log, when not nil, takes
// what the store says of the faults it mends.
func openServingStore(ctx context.Context, c *commonFlags, migrate bool, log *slog.Logger) (store.Store, error) {
	if err := checkDatabases(c); err != nil {
		return nil, err
	}
	keys, err := secretsKeys(c)
	if err != nil {
		return nil, err
	}
	return engines.Open(ctx, c.database, engines.Options{DirectURL: c.direct, Replicas: c.replicas, KeepSchema: !migrate, Secrets: keys, Log: log})
}

// secretsKeys reads --secrets-key-file: nil when it is not given.
func secretsKeys(c *commonFlags) (*secrets.Keyring, error) {
	if c.secretsKeyFile == "" {
		return nil, nil
	}
	k, err := secrets.Load(c.secretsKeyFile)
	if err != nil {
		return nil, badSetting("secrets-key-file", c.secretsKeyFile, err.Error())
	}
	return k, nil
}

// openAccountStore is openStore for a command (cmd, as its errors name it)
// that works on one account, which must exist.
func openAccountStore(ctx context.Context, c *commonFlags, cmd, account string) (store.Store, error) {
	st, err := openStore(ctx, c)
	if err != nil {
		return nil, err
	}
	if _, err := st.GetAccount(ctx, account); err != nil {
		st.Close()
		if errors.Is(err, domain.ErrNotFound) {
			return nil, noAccountError{cmd, account}
		}
		return nil, err
	}
	return st, nil
}

// noAccountError names the account a command was given that does not exist.
type noAccountError struct{ cmd, account string }

func (e noAccountError) Error() string {
	return fmt.Sprintf("%s: there is no account %q (pds accounts list shows them)", e.cmd, e.account)
}

func (e noAccountError) Is(target error) bool { return target == domain.ErrNotFound }

func (e cmdEnv) migrate(fs *pflag.FlagSet) func([]string) error {
	c := commonFlagsOn(fs)
	return func([]string) error {
		if err := checkDatabases(c); err != nil {
			return err
		}
		target := c.database
		if c.direct != "" {
			target = c.direct
		}
		pending := pendingMigrations(e.ctx, target)
		var err error
		if isPostgres(target) {
			err = postgres.Migrate(e.ctx, target)
		} else {
			err = sqlite.Migrate(e.ctx, target)
		}
		if err != nil {
			return err
		}
		if c.json {
			out := map[string]any{"migrated": true}
			if pending >= 0 {
				out["applied"] = pending
			}
			return e.printJSON(out)
		}
		switch {
		case pending == 0:
			fmt.Fprintln(e.stdout, "The database is up to date: no migration was pending.")
		case pending > 0:
			fmt.Fprintf(e.stdout, "Applied %s.\n", plural(pending, "migration", "migrations"))
		default:
			fmt.Fprintln(e.stdout, "Migrations applied.")
		}
		return nil
	}
}

// pendingMigrations counts the migrations database lacks (all of them for
// an SQLite file not there yet), -1 when it cannot tell: another instance
// may migrate meanwhile, so the count is for the message only.
func pendingMigrations(ctx context.Context, database string) int {
	var err error
	if isPostgres(database) {
		err = postgres.CheckCurrent(ctx, database)
	} else {
		if _, serr := os.Stat(database); errors.Is(serr, fs.ErrNotExist) {
			return sqlite.MigrationCount()
		}
		err = sqlite.CheckCurrent(ctx, database)
	}
	var behind *schema.BehindError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &behind):
		return len(behind.Pending)
	}
	return -1
}

// fallbackPublicURL is the base of links when neither --public-url nor a
// started server says where the server is: pds serve's own default.
const fallbackPublicURL = "http://localhost:8080"

// servedURL is the base of the links a command prints: given, or else the
// public URL the last pds serve to start on the database recorded.
func servedURL(ctx context.Context, st store.Store, given string) (string, error) {
	if given != "" {
		return strings.TrimRight(given, "/"), nil
	}
	url, err := st.PublicURL(ctx)
	if err != nil || url == "" {
		return fallbackPublicURL, err
	}
	return url, nil
}
