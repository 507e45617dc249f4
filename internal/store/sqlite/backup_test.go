package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBackupWritesOnlyAFileOfItsOwn: a backup into a directory where
// someone else planted files (a world-writable one, as /tmp) writes the
// copy through a file it created itself and gives it its name only where
// nothing stands: a planted DEST.partial is neither filled, removed nor
// changed, and a file that appears at DEST while the copy is made is not
// replaced (the backup fails instead).
func TestBackupWritesOnlyAFileOfItsOwn(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o1777); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "pds.db")
	st, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	plant := func(name string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, nil, 0o666); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o666); err != nil {
			t.Fatal(err)
		}
		return p
	}
	untouched := func(p string) {
		t.Helper()
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatalf("the planted %s: %v", filepath.Base(p), err)
		}
		if fi.Size() != 0 || fi.Mode().Perm() != 0o666 {
			t.Fatalf("the planted %s was written: %d bytes, mode %v", filepath.Base(p), fi.Size(), fi.Mode().Perm())
		}
	}

	dest := filepath.Join(dir, "copy.db")
	partial := plant("copy.db.partial")
	if _, err := Backup(ctx, path, dest); err != nil {
		t.Fatal(err)
	}
	untouched(partial)
	fi, err := os.Stat(dest)
	if err != nil || fi.Size() == 0 || fi.Mode().Perm() != privateFile {
		t.Fatalf("the backup %s: %v, %v", dest, fi, err)
	}

	late := filepath.Join(dir, "late.db")
	beforeBackupRename = func() { plant("late.db") }
	defer func() { beforeBackupRename = nil }()
	if _, err := Backup(ctx, path, late); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("a backup whose name was taken while it copied: %v", err)
	}
	untouched(late)
	left, _ := filepath.Glob(filepath.Join(dir, "*late*"))
	if len(left) != 1 {
		t.Fatalf("a backup that failed left %v", left)
	}
}
