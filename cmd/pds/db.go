package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/secrets"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/store/postgres"
	"github.com/pds-dev/pds/internal/store/sqlite"
)

func isPostgres(database string) bool {
	return strings.HasPrefix(database, "postgres://") || strings.HasPrefix(database, "postgresql://")
}

// openStore opens the engine the --database value names, migrating it.
func openStore(ctx context.Context, c *commonFlags) (store.Store, error) {
	return openServingStore(ctx, c, true)
}

// openServingStore is openStore for a server, which may be told not to
// migrate: without migrate it changes no schema and refuses a database
// that lacks a migration (--migrate=false). Its requests' deadlines end
// their statements on the server too (postgres.connConfig); SQLite's busy
// waits already end with each call's context.
func openServingStore(ctx context.Context, c *commonFlags, migrate bool) (store.Store, error) {
	if err := checkDatabases(c); err != nil {
		return nil, err
	}
	keys, err := secretsKeys(c)
	if err != nil {
		return nil, err
	}
	if isPostgres(c.database) {
		return postgres.Open(ctx, c.database, postgres.Options{DirectURL: c.direct, KeepSchema: !migrate, Secrets: keys})
	}
	return sqlite.OpenWith(ctx, c.database, sqlite.Options{KeepSchema: !migrate, Secrets: keys})
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

func (e cmdEnv) migrate(args []string) error {
	fs, c := e.newFlags("migrate")
	if err := parse(fs, args); err != nil {
		return err
	}
	err := checkDatabases(c)
	switch {
	case err != nil:
	case c.direct != "":
		err = postgres.Migrate(e.ctx, c.direct)
	case isPostgres(c.database):
		err = postgres.Migrate(e.ctx, c.database)
	default:
		err = sqlite.Migrate(e.ctx, c.database)
	}
	if err != nil {
		return err
	}
	if c.json {
		return e.printJSON(map[string]any{"migrated": true})
	}
	_, _ = e.stdout.Write([]byte("Migrations applied.\n"))
	return nil
}
