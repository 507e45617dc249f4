package sqlite

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic(err)
	}
	return sub
}

// The database and its backups hold every person and every webhook
// signing secret, so what pds creates for them is its owner's alone,
// whatever the umask: SQLite would create the file 0644 less the umask,
// readable by every local user under the usual 022. Its write-ahead log
// and shared-memory file take the database file's mode (SQLite gives them
// the mode of the file they belong to). A file or directory that is
// already there keeps the mode its owner gave it.
const (
	privateFile fs.FileMode = 0o600
	privateDir  fs.FileMode = 0o700
)

// createPrivate creates the file at path, empty, and every missing
// directory above it, for its owner alone; a file already there is left
// as it is.
func createPrivate(path string) error {
	if err := mkdirPrivate(filepath.Dir(path)); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, privateFile)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	// The umask may have taken bits off; this sets exactly the owner's.
	if err := f.Chmod(privateFile); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// mkdirPrivate creates dir and every missing directory above it for their
// owner alone; those already there keep their modes.
func mkdirPrivate(dir string) error {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		err := os.Mkdir(missing[i], privateDir)
		if errors.Is(err, fs.ErrExist) {
			continue // made meanwhile by another process: its mode is its own
		}
		if err != nil {
			return err
		}
		if err := os.Chmod(missing[i], privateDir); err != nil {
			return err
		}
	}
	return nil
}

// linkThenUnlink gives the file at from the name to as well, which a link
// refuses when the name is taken (fs.ErrExist), then drops from.
func linkThenUnlink(from, to string) error {
	if err := os.Link(from, to); err != nil {
		return err
	}
	return os.Remove(from)
}
