package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// BackupResult describes a finished backup.
type BackupResult struct {
	File     string
	Bytes    int64
	Duration time.Duration
}

// Backup writes a consistent copy of the database at path to dest, which
// must not exist, while other connections (a running server) keep writing:
// VACUUM INTO reads one snapshot in a read transaction, which in WAL mode
// neither waits for writers nor holds them up. It holds every transaction
// committed before Backup began.
//
// The copy is written into a file Backup creates itself, beside dest, with
// O_EXCL, a random name and mode 0600 (os.CreateTemp): in a directory
// others may write (a shared /tmp), a file someone planted under a name
// pds would use is never filled with the database, nor removed. The copy
// is checked (PRAGMA integrity_check), synced, and only then given its
// name by a rename that refuses to replace a file (renameNoReplace), so
// dest is never a partial or unchecked file, and a file that appeared at
// dest meanwhile is left as it is.
func Backup(ctx context.Context, path, dest string) (BackupResult, error) {
	start := time.Now()
	if _, err := os.Stat(path); err != nil {
		return BackupResult{}, fmt.Errorf("database %q: %w", path, err)
	}
	exists := fmt.Errorf("%q exists: a backup never overwrites a file; name a new one", dest)
	if _, err := os.Lstat(dest); err == nil {
		return BackupResult{}, exists
	} else if !errors.Is(err, fs.ErrNotExist) {
		return BackupResult{}, err
	}
	dir := filepath.Dir(dest)
	if err := mkdirPrivate(dir); err != nil {
		return BackupResult{}, err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(dest)+".*.partial")
	if err != nil {
		return BackupResult{}, err
	}
	partial := f.Name()
	named := false
	defer func() {
		f.Close()
		if !named {
			_ = os.Remove(partial)
		}
	}()
	// The umask may have taken bits off; this sets exactly the owner's.
	if err := f.Chmod(privateFile); err != nil {
		return BackupResult{}, err
	}
	// VACUUM INTO opens the file by its name and fills it as it finds it
	// (empty): the name must still be the file made here when it is done.
	if err := vacuumInto(ctx, path, partial); err != nil {
		return BackupResult{}, err
	}
	if err := stillOwn(f, partial); err != nil {
		return BackupResult{}, err
	}
	if err := checkIntegrity(ctx, partial); err != nil {
		return BackupResult{}, err
	}
	if err := f.Sync(); err != nil {
		return BackupResult{}, err
	}
	fi, err := f.Stat()
	if err != nil {
		return BackupResult{}, err
	}
	if beforeBackupRename != nil {
		beforeBackupRename()
	}
	if err := renameNoReplace(partial, dest); errors.Is(err, fs.ErrExist) {
		return BackupResult{}, exists
	} else if err != nil {
		return BackupResult{}, err
	}
	named = true
	if err := syncDir(dir); err != nil {
		return BackupResult{}, err
	}
	return BackupResult{File: dest, Bytes: fi.Size(), Duration: time.Since(start)}, nil
}

// stillOwn fails unless name is still the file f, the one Backup created.
func stillOwn(f *os.File, name string) error {
	mine, err := f.Stat()
	if err != nil {
		return err
	}
	there, err := os.Lstat(name)
	if err != nil {
		return err
	}
	if !os.SameFile(mine, there) {
		return fmt.Errorf("%q was replaced while the backup was written into it; nothing was kept", name)
	}
	return nil
}

func vacuumInto(ctx context.Context, path, dest string) error {
	db, err := sql.Open("sqlite", dsn(path, false, busyTimeout))
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `VACUUM INTO ?`, dest); err != nil {
		return fmt.Errorf("VACUUM INTO %q: %w", dest, err)
	}
	return nil
}

// checkIntegrity opens the copy on its own and runs SQLite's full check.
func checkIntegrity(ctx context.Context, file string) error {
	db, err := sql.Open("sqlite", "file:"+file+"?mode=ro")
	if err != nil {
		return err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `PRAGMA integrity_check`)
	if err != nil {
		return fmt.Errorf("integrity check of %q: %w", file, err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return err
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("integrity check of %q failed: %v", file, problems)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// beforeBackupRename, set by tests only, runs just before the copy is
// given its name.
var beforeBackupRename func()
