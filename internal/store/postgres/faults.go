package postgres

import (
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store/sqlstore"
)

// unavailable names the fault behind an error of pgx when PostgreSQL cannot
// serve for now, "" for anything else (sqlstore.Dialect.Unavailable).
func unavailable(err error) domain.Cause {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return stateCause(pe.Code)
	}
	if errors.Is(err, errCommitUnconfirmed) {
		// As a timeout: the deadline passed before the commit was
		// confirmed, and whether it survives is unknown.
		return domain.CauseTimeout
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	switch {
	case pgconn.Timeout(err):
		return domain.CauseTimeout
	case errors.As(err, &ce), errors.Is(err, pgconn.ErrConnClosed), errors.As(err, &ne),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		// Nothing answered, or the connection went away under the statement.
		return domain.CauseUnreachable
	}
	return ""
}

// readOnlyTransaction is SQLSTATE 25006, read_only_sql_transaction: a write
// reached a server that takes none (a standby, a primary being demoted in
// a failover, default_transaction_read_only).
const readOnlyTransaction = "25006"

// stateCause maps a SQLSTATE the server sent to a fault of the moment.
func stateCause(code string) domain.Cause {
	switch {
	case strings.HasPrefix(code, "08"), // connection exception
		code == "57P01",             // admin_shutdown: the server is stopping
		code == "57P02",             // crash_shutdown: another backend crashed
		code == "57P03",             // cannot_connect_now: starting up, or in recovery
		code == "57P05",             // idle_session_timeout: the server ended the session
		code == "25P03",             // idle_in_transaction_session_timeout, likewise
		code == "53300",             // too_many_connections
		code == readOnlyTransaction: // no writable primary behind the connection
		return domain.CauseUnreachable
	case code == "57014", // query_canceled: statement_timeout, or the deadline's cancel
		code == "55P03": // lock_not_available: lock_timeout
		return domain.CauseTimeout
	case code == "53100": // disk_full
		return domain.CauseDiskFull
	}
	return ""
}

// noPrimary says err means that the servers answer but none takes writes
// (sqlstore.Dialect.NoPrimary): a write met a read-only transaction, or no
// host of the URL passed target_session_attrs or the check of its timeline
// (watchServers).
func noPrimary(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == readOnlyTransaction
	}
	var wb *errWentBack
	return errors.Is(err, pgconn.ErrReadOnlyConnection) || errors.Is(err, pgconn.ErrStandbyConnection) ||
		errors.Is(err, errStandby) || errors.As(err, &wb)
}

// writable answers whether the server behind a connection takes writes
// (sqlstore.Dialect.Writable).
const writable = `SELECT NOT (pg_is_in_recovery() OR current_setting('transaction_read_only')::bool)`

// conflict names the conflict with a concurrent transaction that failed a
// transaction or statement, "" for anything else (sqlstore.Dialect.Conflict).
// PostgreSQL rolls the loser back whole in both cases.
func conflict(err error) string {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return ""
	}
	switch pe.Code {
	case "40P01": // deadlock_detected
		return sqlstore.ConflictDeadlock
	case "40001": // serialization_failure
		return sqlstore.ConflictSerialization
	case "23503": // foreign_key_violation: a person erased under a write that matched it
		return sqlstore.ConflictErased
	}
	return ""
}
