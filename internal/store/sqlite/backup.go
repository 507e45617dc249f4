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
// neither waits for writers nor holds them up. The copy is written beside
// dest, checked (PRAGMA integrity_check), synced and only then renamed to
// dest, so dest is never a partial or unchecked file. It holds every
// transaction committed before Backup began.
func Backup(ctx context.Context, path, dest string) (BackupResult, error) {
	start := time.Now()
	if _, err := os.Stat(path); err != nil {
		return BackupResult{}, fmt.Errorf("database %q: %w", path, err)
	}
	if _, err := os.Lstat(dest); err == nil {
		return BackupResult{}, fmt.Errorf("%q exists: a backup never overwrites a file; name a new one", dest)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return BackupResult{}, err
	}
	partial := dest + ".partial"
	_ = os.Remove(partial) // left by a backup that was cut short
	// VACUUM INTO fills an empty file as it finds it: created here, the
	// copy is its owner's alone, as the database is (createPrivate).
	if err := createPrivate(partial); err != nil {
		return BackupResult{}, err
	}
	if err := vacuumInto(ctx, path, partial); err != nil {
		_ = os.Remove(partial)
		return BackupResult{}, err
	}
	if err := checkIntegrity(ctx, partial); err != nil {
		_ = os.Remove(partial)
		return BackupResult{}, err
	}
	size, err := syncFile(partial)
	if err != nil {
		_ = os.Remove(partial)
		return BackupResult{}, err
	}
	if err := os.Rename(partial, dest); err != nil {
		_ = os.Remove(partial)
		return BackupResult{}, err
	}
	if err := syncDir(filepath.Dir(dest)); err != nil {
		return BackupResult{}, err
	}
	return BackupResult{File: dest, Bytes: size, Duration: time.Since(start)}, nil
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

func syncFile(file string) (int64, error) {
	f, err := os.OpenFile(file, os.O_RDWR, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return 0, err
	}
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
