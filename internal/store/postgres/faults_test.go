package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pds-dev/pds/internal/domain"
)

// TestUnavailable: what PostgreSQL and pgx report when the database
// cannot serve for now is named as its fault; a refusal of the statement
// itself, or a defect, is not.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	// A real refused connection: nothing listens on the port.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, refused := pgconn.Connect(context.Background(), "postgres://postgres@"+addr+"/x?sslmode=disable&connect_timeout=2")
	if refused == nil {
		t.Fatal("connected to a port nothing listens on")
	}
	state := func(code string) error { return fmt.Errorf("exec: %w", &pgconn.PgError{Severity: "FATAL", Code: code}) }
	for _, c := range []struct {
		name string
		err  error
		want domain.Cause
	}{
		{"connection refused", refused, domain.CauseUnreachable},
		{"the server shutting down (admin_shutdown)", state("57P01"), domain.CauseUnreachable},
		{"another backend crashed (crash_shutdown)", state("57P02"), domain.CauseUnreachable},
		{"starting up or in recovery (cannot_connect_now)", state("57P03"), domain.CauseUnreachable},
		{"a connection exception", state("08006"), domain.CauseUnreachable},
		{"too many connections", state("53300"), domain.CauseUnreachable},
		{"a write on a server that takes none (read_only_sql_transaction)", state("25006"), domain.CauseUnreachable},
		{"the session ended by idle_session_timeout", state("57P05"), domain.CauseUnreachable},
		{"the session ended by idle_in_transaction_session_timeout", state("25P03"), domain.CauseUnreachable},
		{"a commit the synchronous standbys did not confirm", fmt.Errorf("commit: %w", errCommitUnconfirmed), domain.CauseTimeout},
		{"connection lost mid-statement", fmt.Errorf("query: %w", io.ErrUnexpectedEOF), domain.CauseUnreachable},
		{"a closed connection", fmt.Errorf("query: %w", pgconn.ErrConnClosed), domain.CauseUnreachable},
		{"statement_timeout", state("57014"), domain.CauseTimeout},
		{"lock_timeout", state("55P03"), domain.CauseTimeout},
		{"disk full", state("53100"), domain.CauseDiskFull},
		{"a unique violation", state("23505"), ""},
		{"a syntax error (a defect)", state("42601"), ""},
		{"a serialization failure", state("40001"), ""},
		{"anything else", errors.New("boom"), ""},
	} {
		if got := unavailable(c.err); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestClosesOnReadOnly: a connection that met a read-only transaction is
// closed (OnPgError false), as one that met a FATAL error is; any other
// error keeps it.
func TestClosesOnReadOnly(t *testing.T) {
	t.Parallel()
	cfg, err := connConfig("postgres://pds@db/pds")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		err  pgconn.PgError
		keep bool
	}{
		{"read_only_sql_transaction", pgconn.PgError{Severity: "ERROR", Code: "25006"}, false},
		{"a FATAL error", pgconn.PgError{Severity: "FATAL", Code: "57P01"}, false},
		{"a unique violation", pgconn.PgError{Severity: "ERROR", Code: "23505"}, true},
	} {
		if got := cfg.OnPgError(nil, &c.err); got != c.keep {
			t.Errorf("%s: keep %v, want %v", c.name, got, c.keep)
		}
	}
}

// TestNoPrimary: what says that the servers answer but none takes writes.
func TestNoPrimary(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"a write on a read-only server", fmt.Errorf("exec: %w", &pgconn.PgError{Code: "25006"}), true},
		{"every host read-only (target_session_attrs=read-write)", fmt.Errorf("connect: %w", pgconn.ErrReadOnlyConnection), true},
		{"every host a standby (target_session_attrs=primary)", fmt.Errorf("connect: %w", pgconn.ErrStandbyConnection), true},
		{"an old primary refused for its older timeline", fmt.Errorf("connect: %w", &errWentBack{timeline: 1, newest: 2}), true},
		{"a server shutting down", &pgconn.PgError{Code: "57P01"}, false},
		{"a refused connection", io.ErrUnexpectedEOF, false},
	} {
		if got := noPrimary(c.err); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
