//go:build unix

package sqlite_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/pds-dev/pds/internal/store/sqlite"
	"github.com/pds-dev/pds/internal/store/storetest"
)

func wantMode(t *testing.T, path string, want fs.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s is %04o, want %04o", path, got, want)
	}
}

// TestNewFilesAreOwnerOnly: the database, its write-ahead log and shared
// memory, a backup, and every directory created for them, are readable
// by their owner alone, under the umask most systems give (022): they hold
// every person and every webhook signing secret. A file or directory that
// was there before keeps the mode its owner gave it. Not parallel: the
// umask is the process's.
func TestNewFilesAreOwnerOnly(t *testing.T) {
	defer syscall.Umask(syscall.Umask(0o022))
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "var", "pds", "pds.db")
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	storetest.NewAccount(t, st) // a write, so that the log has pages
	for _, d := range []string{filepath.Join(dir, "var"), filepath.Join(dir, "var", "pds")} {
		wantMode(t, d, 0o700)
	}
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		wantMode(t, f, 0o600)
	}

	copied := filepath.Join(dir, "backups", "pds-copy.db")
	if _, err := sqlite.Backup(ctx, path, copied); err != nil {
		t.Fatal(err)
	}
	wantMode(t, filepath.Join(dir, "backups"), 0o700)
	wantMode(t, copied, 0o600)

	// An operator's own choice stays: a directory and a file made before.
	shared := filepath.Join(dir, "shared")
	if err := os.Mkdir(shared, 0o750); err != nil {
		t.Fatal(err)
	}
	existing := filepath.Join(shared, "pds.db")
	if err := os.WriteFile(existing, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	other, err := sqlite.Open(ctx, existing)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	wantMode(t, shared, 0o750)
	wantMode(t, existing, 0o640)
}
