package postgres

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// A write is acknowledged only once its commit is as durable as the
// operator asked (synchronous_commit, synchronous_standby_names). With
// synchronous standbys, a commit waits, after it is written locally, until
// they have it; when that wait is cancelled (pds's deadline sends the
// cancel, cancel.go), the server ends the commit successfully anyway, with
// only a WARNING notice to say that the transaction "has already committed
// locally, but might not have been replicated to the standby". A failover
// then may lose it. So every statement that commits (a COMMIT, or a
// statement outside a transaction) is checked after it returns: one that
// drew that notice, or whose deadline passed while it ran, fails with
// errCommitUnconfirmed, a refusal (database_timeout) whose outcome is
// unknown, as when the connection is lost at a commit.

// errCommitUnconfirmed fails a statement that committed without the
// confirmation the server's settings ask for.
var errCommitUnconfirmed = errors.New("postgres: the commit returned before the synchronous standbys confirmed it " +
	"(its wait was cancelled at the deadline): it may or may not survive a failover")

// commitNotice is the key of a connection's CustomData that a notice of a
// cancelled wait for the synchronous standbys sets (noticeSyncCancel).
const commitNotice = "pds.sync-rep-cancelled"

// syncRepCancelled reports whether a notice says that a commit's wait for
// the synchronous standbys ended before they confirmed it. Its message is
// localised (lc_messages), its severity and code are not: WARNING 01000
// when a cancel ended the wait, WARNING 57P01 when the backend is being
// terminated (whose connection then ends without an answer). PostgreSQL
// raises no other warning at a commit of pds's statements.
func syncRepCancelled(n *pgconn.Notice) bool {
	return n.SeverityUnlocalized == "WARNING" && (n.Code == "01000" || n.Code == "57P01")
}

// noticeSyncCancel is every connection's OnNotice: it marks the connection
// that a notice of a cancelled wait reached. The statement that drew it
// runs on the same goroutine, which reads the mark once it returns.
func noticeSyncCancel(c *pgconn.PgConn, n *pgconn.Notice) {
	if syncRepCancelled(n) {
		c.CustomData()[commitNotice] = true
	}
}

// commitOutcome is what a statement that committed answers: its own error,
// else errCommitUnconfirmed when the wait for the synchronous standbys was
// cancelled during it (syncCancelled) or its deadline passed meanwhile
// (deadline, its context's error), else success.
func commitOutcome(err error, syncCancelled bool, deadline error) error {
	switch {
	case err != nil:
		return err
	case syncCancelled, deadline != nil:
		return errCommitUnconfirmed
	}
	return nil
}

// confirmingConnector opens the pool's connections as stdlib does, each a
// confirmingConn.
type confirmingConnector struct{ driver.Connector }

func (c confirmingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &confirmingConn{Conn: conn.(*stdlib.Conn)}, nil
}

// confirmingConn is a connection of the pool whose statements that commit
// answer as commitOutcome decides.
type confirmingConn struct {
	*stdlib.Conn
	// inTx: a transaction is open, and its statements commit nothing.
	inTx bool
}

// IsValid keeps a connection whose network connection cancelOnDeadline
// closed out of the pool, where its next statement would fail at once.
func (c *confirmingConn) IsValid() bool {
	pc := c.Conn.Conn().PgConn()
	return !pc.IsClosed() && pc.CustomData()[closedAfterCancel] != true
}

// ResetSession is the same check before a connection is used again.
func (c *confirmingConn) ResetSession(ctx context.Context) error {
	if !c.IsValid() {
		return driver.ErrBadConn
	}
	return c.Conn.ResetSession(ctx)
}

// forgetNotice drops a mark left by an earlier statement.
func (c *confirmingConn) forgetNotice() { delete(c.Conn.Conn().PgConn().CustomData(), commitNotice) }

// noticed reports whether a notice of a cancelled wait reached c since
// forgetNotice.
func (c *confirmingConn) noticed() bool {
	return c.Conn.Conn().PgConn().CustomData()[commitNotice] == true
}

// outcome is commitOutcome for a statement that committed on c and just
// returned err under ctx.
func (c *confirmingConn) outcome(ctx context.Context, err error) error {
	data := c.Conn.Conn().PgConn().CustomData()
	cancelled := data[commitNotice] == true
	delete(data, commitNotice)
	return commitOutcome(err, cancelled, ctx.Err())
}

func (c *confirmingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := c.Conn.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	c.inTx = true
	return &confirmingTx{Tx: tx, c: c, ctx: ctx, readOnly: opts.ReadOnly}, nil
}

func (c *confirmingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if c.inTx {
		return c.Conn.ExecContext(ctx, query, args)
	}
	c.forgetNotice()
	res, err := c.Conn.ExecContext(ctx, query, args)
	if err = c.outcome(ctx, err); err != nil {
		return nil, err
	}
	return res, nil
}

func (c *confirmingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if c.inTx {
		return c.Conn.QueryContext(ctx, query, args)
	}
	c.forgetNotice()
	rows, err := c.Conn.QueryContext(ctx, query, args)
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil || c.noticed() {
		// The server sends a small result only with the commit's answer,
		// so the first row came once the commit, wait included, was over:
		// after the deadline, or after the wait was cancelled. Answered
		// here, not at the end of the rows, which database/sql closes on
		// its own once the deadline has passed, dropping what Close says.
		return nil, c.outcome(ctx, rows.Close())
	}
	return &confirmingRows{Rows: rows.(*stdlib.Rows), c: c, ctx: ctx}, nil
}

// confirmingRows are the rows of a statement outside a transaction: the
// commit's notice arrives with the end of its rows, so the last Next (or a
// Close before it) answers as commitOutcome decides.
type confirmingRows struct {
	*stdlib.Rows
	c       *confirmingConn
	ctx     context.Context
	checked bool
}

func (r *confirmingRows) Next(dest []driver.Value) error {
	err := r.Rows.Next(dest)
	if errors.Is(err, io.EOF) && !r.checked {
		r.checked = true
		if failed := r.c.outcome(r.ctx, nil); failed != nil {
			return failed
		}
	}
	return err
}

func (r *confirmingRows) Close() error {
	err := r.Rows.Close()
	if r.checked {
		return err
	}
	r.checked = true
	return r.c.outcome(r.ctx, err)
}

// confirmingTx is a transaction whose COMMIT answers as commitOutcome
// decides; a read-only one commits nothing to confirm.
type confirmingTx struct {
	driver.Tx
	c        *confirmingConn
	ctx      context.Context
	readOnly bool
}

func (tx *confirmingTx) Commit() error {
	defer func() { tx.c.inTx = false }()
	if tx.readOnly {
		return tx.Tx.Commit()
	}
	tx.c.forgetNotice()
	return tx.c.outcome(tx.ctx, tx.Tx.Commit())
}

func (tx *confirmingTx) Rollback() error {
	defer func() { tx.c.inTx = false }()
	return tx.Tx.Rollback()
}
