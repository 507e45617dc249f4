package sqlite

import (
	"errors"
	"syscall"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store/sqlstore"
)

// unavailable names the fault behind an error of the SQLite driver when the
// database cannot serve for now, "" for anything else
// (sqlstore.Dialect.Unavailable).
func unavailable(err error) domain.Cause {
	if errors.Is(err, syscall.ENOSPC) {
		return domain.CauseDiskFull
	}
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return ""
	}
	// The primary result code is the low byte of an extended one.
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_FULL:
		return domain.CauseDiskFull
	case sqlite3.SQLITE_IOERR:
		// The file system failed a read or a write, or the WAL index
		// was cut short under its mapping (walIndexCutShort); SQLite
		// rolled the statement back, and the same call may succeed once
		// the cause is gone.
		return domain.CauseDiskError
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		// Another process (an import, a backup) held the write lock past
		// the busy timeout.
		return domain.CauseTimeout
	case sqlite3.SQLITE_CANTOPEN:
		return domain.CauseUnreachable
	}
	return ""
}

// walIndexCutShort says that err is SQLite's answer to a read of the WAL
// index's mapping beyond the end of the -shm file: another process
// truncated the file under this one (mendWALIndex).
func walIndexCutShort(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code() == sqlite3.SQLITE_IOERR_IN_PAGE
}

// conflict names the conflict that failed a transaction, "" for anything
// else (sqlstore.Dialect.Conflict): SQLITE_BUSY, the write lock held by
// another connection or process (a backup, an import) when the busy wait
// gave up before the caller's deadline did.
func conflict(err error) string {
	var se *sqlite.Error
	if errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY {
		return sqlstore.ConflictBusy
	}
	return ""
}
