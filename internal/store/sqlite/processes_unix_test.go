//go:build unix

package sqlite

import (
	"os"
	"syscall"
)

// walIndexInUse asks, as SQLite does when a process opens a database,
// whether another process holds a lock on the DMS byte of the WAL index at
// path-shm (os_unix.c, unixLockSharedMemory): when none does, the process
// takes the index for unused and starts it over.
func walIndexInUse(path string) (bool, error) {
	f, err := os.Open(path + "-shm")
	if err != nil {
		return false, err
	}
	defer f.Close()
	const dmsByte = 120 + 8 // UNIX_SHM_BASE + UNIX_SHM_DMS - UNIX_SHM_BASE
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: dmsByte, Len: 1}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lk); err != nil {
		return false, err
	}
	return lk.Type != syscall.F_UNLCK, nil
}
