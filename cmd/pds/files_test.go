//go:build unix

package main

import (
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/testenv"
)

// underUmask022 runs the test binary as pds with the arguments, under the
// umask most systems give a user (022), which alone would leave a new file
// readable by every local user.
func underUmask022(args ...string) *exec.Cmd {
	cmd := exec.Command("sh", append([]string{"-c", `umask 022 && exec "$0" "$@"`, os.Args[0]}, args...)...)
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	return cmd
}

// wantMode fails unless the file at path has exactly the permissions want.
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

// TestFilesArePrivate: under a umask of 022, pds serve creates the SQLite
// database (and the directory it names, when missing), its write-ahead log
// and shared-memory file, and pds backup its copy (and its directory),
// readable by their owner alone: they hold every person and every webhook
// signing secret.
func TestFilesArePrivate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "data", "pds.db")
	srv := underUmask022("serve", "--addr", "127.0.0.1:0", "--database", db)
	out := &testenv.Buffer{}
	srv.Stdout = out
	logs, err := srv.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	addr := make(chan string, 1)
	go func() { addr <- servingAddr(logs); _, _ = io.Copy(io.Discard, logs) }()
	select {
	case a := <-addr:
		if a == "" {
			t.Fatalf("pds serve stopped before serving; it printed %s", out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("pds serve did not come up; it printed %s", out.String())
	}
	// The first start wrote the account and its key: the log and the
	// shared memory are there while the server runs.
	wantMode(t, filepath.Join(dir, "data"), 0o700)
	for _, f := range []string{db, db + "-wal", db + "-shm"} {
		wantMode(t, f, 0o600)
	}

	copied := filepath.Join(dir, "backups", "pds-copy.db")
	if b, err := underUmask022("backup", "--database", db, copied).CombinedOutput(); err != nil {
		t.Fatalf("pds backup: %v\n%s", err, b)
	}
	wantMode(t, filepath.Join(dir, "backups"), 0o700)
	wantMode(t, copied, 0o600)
}
