package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/store/postgres"
	"github.com/pds-dev/pds/internal/store/sqlite"
)

func isPostgres(database string) bool {
	return strings.HasPrefix(database, "postgres://") || strings.HasPrefix(database, "postgresql://")
}

// openStore opens the engine the --database value names, migrating it.
func openStore(ctx context.Context, database string) (store.Store, error) {
	return openServingStore(ctx, database, 0, true)
}

// openServingStore is openStore for a server whose requests give up on the
// database after statementTimeout: on PostgreSQL the server ends their
// statements then too (postgres.Options). SQLite's busy waits already end
// with each call's context. Without migrate it changes no schema and
// refuses a database that lacks a migration (--migrate=false).
func openServingStore(ctx context.Context, database string, statementTimeout time.Duration, migrate bool) (store.Store, error) {
	if err := checkDatabase(database); err != nil {
		return nil, err
	}
	if isPostgres(database) {
		return postgres.Open(ctx, database, postgres.Options{StatementTimeout: statementTimeout, KeepSchema: !migrate})
	}
	return sqlite.OpenWith(ctx, database, sqlite.Options{KeepSchema: !migrate})
}

// openAccountStore is openStore for a command (cmd, as its errors name it)
// that works on one account, which must exist.
func openAccountStore(ctx context.Context, database, cmd, account string) (store.Store, error) {
	st, err := openStore(ctx, database)
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
	err := checkDatabase(c.database)
	switch {
	case err != nil:
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
