package sqlite

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// renameNoReplace gives the file at from the name to, atomically, only if
// nothing has that name (renameat2 with RENAME_NOREPLACE): fs.ErrExist
// otherwise. A file system that cannot (EINVAL) gets link and unlink,
// which refuse a taken name too.
func renameNoReplace(from, to string) error {
	err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		return linkThenUnlink(from, to)
	}
	if err != nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	return nil
}
