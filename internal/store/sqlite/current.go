package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/pressly/goose/v3"

	"github.com/pds-dev/pds/internal/store/schema"
)

// CheckCurrent returns a *schema.BehindError when the file at path lacks a
// migration of this binary, and an error when there is no such file; it
// creates and writes nothing. A file ahead of the binary is current.
func CheckCurrent(ctx context.Context, path string) error {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("there is no SQLite database at %s, and with --migrate=false pds serve creates none: run \"pds migrate --database %s\" first", path, path)
	}
	// mode=rw opens without creating, should the file go in the meantime;
	// query_only refuses any write.
	db, err := sql.Open("sqlite", "file:"+path+"?mode=rw&_pragma=busy_timeout(10000)&_pragma=query_only(ON)")
	if err != nil {
		return err
	}
	defer db.Close()
	return schema.Check(ctx, "sqlite", db, goose.DialectSQLite3, mustSub(migrations, "migrations"), goMigrations()...)
}
