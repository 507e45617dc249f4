//go:build unix

package sqlite

import (
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// walIndex reads the header of a database's WAL index (the -shm file),
// which every process sharing the database maps: SQLite rewrites it with
// every transaction a connection commits, in any process, and its iChange
// counts them (https://www.sqlite.org/walformat.html, "The WAL-Index
// Header"). While it holds what it held at the start of the last read of
// the key change counter, nothing was committed since, so that read still
// holds, and the read need not run again. It is mapped read-only.
type walIndex struct {
	mem []byte
}

// walHeaderWords is the header's size in 32-bit words; it is written
// twice, one copy after the other, and a reader that finds the two copies
// different has caught a writer between them.
const walHeaderWords = 12

// walIndexVersion is the header's iVersion.
const walIndexVersion = 3007000

// walHeader is one copy of the header.
type walHeader [walHeaderWords]uint32

// openWALIndex maps the WAL index of the database at path; nil when it
// cannot (no such file yet, another platform).
func openWALIndex(path string) *walIndex {
	f, err := os.Open(path + "-shm")
	if err != nil {
		return nil
	}
	defer f.Close()
	mem, err := syscall.Mmap(int(f.Fd()), 0, 4*2*walHeaderWords, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil
	}
	return &walIndex{mem: mem}
}

// header reads the header; ok is false when the two copies differ (a
// commit is being written) or none is initialised yet.
func (w *walIndex) header() (h walHeader, ok bool) {
	if w == nil {
		return h, false
	}
	words := unsafe.Slice((*uint32)(unsafe.Pointer(&w.mem[0])), 2*walHeaderWords)
	for i := range walHeaderWords {
		h[i] = atomic.LoadUint32(&words[i])
	}
	for i := range walHeaderWords {
		if atomic.LoadUint32(&words[walHeaderWords+i]) != h[i] {
			return h, false
		}
	}
	// iVersion, set when the index is initialised.
	return h, h[0] == walIndexVersion
}

func (w *walIndex) close() {
	if w != nil {
		_ = syscall.Munmap(w.mem)
	}
}
