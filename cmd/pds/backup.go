package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/pds-dev/pds/internal/store/sqlite"
)

// backup copies a live SQLite database (sqlite.Backup); PostgreSQL has
// pg_dump for that.
func (e cmdEnv) backup(fs *pflag.FlagSet) func([]string) error {
	c := commonFlagsOn(fs)
	return func(args []string) error {
		if isPostgres(c.database) {
			return usageError{errors.New("pds backup copies SQLite databases; back up PostgreSQL with its own tools, " +
				"e.g. pg_dump --format=custom --file=pds.dump 'postgres://...' (restore with pg_restore)")}
		}
		if err := checkDatabase(c.database); err != nil {
			return err
		}
		res, err := sqlite.Backup(e.ctx, c.database, args[0])
		if err != nil {
			return fmt.Errorf("backup of %s: %w", c.database, err)
		}
		if c.json {
			return e.printJSON(map[string]any{
				"file": res.File, "bytes": res.Bytes, "duration_ms": res.Duration.Milliseconds(), "integrity": "ok",
			})
		}
		fmt.Fprintf(e.stdout, "Backed up %s to %s: %.1f MB in %s, integrity check ok.\n",
			c.database, res.File, float64(res.Bytes)/1e6, res.Duration.Round(time.Millisecond))
		return nil
	}
}
