package main

import (
	"context"
	"strings"

	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/store/postgres"
	"github.com/pds-dev/pds/internal/store/sqlite"
)

func isPostgres(database string) bool {
	return strings.HasPrefix(database, "postgres://") || strings.HasPrefix(database, "postgresql://")
}

// openStore opens the engine the --database value names, migrating it.
func openStore(ctx context.Context, database string) (store.Store, error) {
	if err := checkDatabase(database); err != nil {
		return nil, err
	}
	if isPostgres(database) {
		return postgres.Open(ctx, database)
	}
	return sqlite.Open(ctx, database)
}

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
