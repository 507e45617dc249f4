//go:build unix

package sqlite

import (
	"os"
	"runtime/debug"
	"sync"
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
//
// The descriptor the mapping was made from stays open until the store's
// connections are closed, and is shared by every store of this process on
// the same file. POSIX drops every lock a process holds on a file when it
// closes any descriptor of that file: closing this one beside SQLite's
// would drop the read lock on the index's DMS byte by which SQLite tells
// other processes the index is in use, and the next process to open the
// database (pds accounts create, say) would start the index over under
// this process's mappings, whose reads then fail with SQLITE_IOERR_IN_PAGE.
type walIndex struct {
	shm *sharedShm
}

// walHeaderWords is the header's size in 32-bit words; it is written
// twice, one copy after the other, and a reader that finds the two copies
// different has caught a writer between them.
const walHeaderWords = 12

// walIndexVersion is the header's iVersion.
const walIndexVersion = 3007000

// walHeader is one copy of the header.
type walHeader [walHeaderWords]uint32

// sharedShm is one -shm file's descriptor and mapping, held for as many
// stores of this process as use it.
type sharedShm struct {
	id   shmID
	f    *os.File
	refs int // under shmFiles' lock
	// mu keeps the mapping from being unmapped under a read of it: a
	// request still checking its key as the store closes reads nothing
	// rather than fault.
	mu  sync.RWMutex
	mem []byte
}

type shmID struct{ dev, ino uint64 }

var shmFiles = struct {
	sync.Mutex
	open map[shmID]*sharedShm
}{open: map[shmID]*sharedShm{}}

// openWALIndex maps the WAL index of the database at path; nil when it
// cannot (no such file yet). The caller holds a connection to the
// database, so SQLite has the file open and locked already.
func openWALIndex(path string) *walIndex {
	shmFiles.Lock()
	defer shmFiles.Unlock()
	// Stat by name first: a descriptor once opened cannot be closed again
	// while this process's SQLite holds locks on the file.
	var st syscall.Stat_t
	if err := syscall.Stat(path+"-shm", &st); err != nil {
		return nil
	}
	id := shmID{uint64(st.Dev), uint64(st.Ino)}
	if s := shmFiles.open[id]; s != nil {
		s.refs++
		return &walIndex{shm: s}
	}
	f, err := os.Open(path + "-shm")
	if err != nil {
		return nil
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, 4*2*walHeaderWords, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		// Kept open, for the reason above: an unused descriptor costs less
		// than the locks.
		s := &sharedShm{id: id, f: f, refs: 1}
		shmFiles.open[id] = s
		return &walIndex{shm: s}
	}
	s := &sharedShm{id: id, f: f, mem: mem, refs: 1}
	shmFiles.open[id] = s
	return &walIndex{shm: s}
}

// header reads the header; ok is false when the two copies differ (a
// commit is being written), none is initialised yet, or the file is
// shorter than the mapping: a process that is not SQLite (or a SQLite that
// found the index unused) truncated it, and a read of the mapping faults.
// SQLite's own reads of the index meet the same fault and say so
// (SQLITE_IOERR_IN_PAGE); this one leaves it to them.
func (w *walIndex) header() (h walHeader, ok bool) {
	if w == nil {
		return h, false
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if recover() != nil {
			h, ok = walHeader{}, false
		}
	}()
	w.shm.mu.RLock()
	defer w.shm.mu.RUnlock()
	if w.shm.mem == nil {
		return h, false
	}
	words := unsafe.Slice((*uint32)(unsafe.Pointer(&w.shm.mem[0])), 2*walHeaderWords)
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

// frames is the header's mxFrame: the frames committed to the WAL since it
// last started over.
func (w *walIndex) frames() (int, bool) {
	h, ok := w.header()
	return int(h[walHeaderMaxFrame]), ok
}

// walHeaderMaxFrame is the word of the header that holds mxFrame.
const walHeaderMaxFrame = 4

// Close lets go of the mapping, and of the descriptor once no store of
// this process uses the file: it runs after the store's connections are
// closed (sqlstore.Store.CloseAfter).
func (w *walIndex) Close() error {
	if w == nil {
		return nil
	}
	shmFiles.Lock()
	defer shmFiles.Unlock()
	s := w.shm
	if s.refs--; s.refs > 0 {
		return nil
	}
	delete(shmFiles.open, s.id)
	s.mu.Lock()
	if s.mem != nil {
		_ = syscall.Munmap(s.mem)
		s.mem = nil
	}
	s.mu.Unlock()
	return s.f.Close()
}
