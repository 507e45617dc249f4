package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
)

// cancelGrace is how long after a request's deadline its connection waits
// for the server to cancel the statement before it gives the statement up
// itself: a frozen server answers no cancel request.
const cancelGrace = 250 * time.Millisecond

// cancelWait bounds the wait for the server's answer to a cancel request.
// PgBouncer 1.18 gives up on its own side after cancel_wait_timeout, 10 s.
const cancelWait = 15 * time.Second

// cancelOnDeadline is the context handler of every connection of the pool
// (connConfig): when a request's context ends during a statement, it asks
// the server to cancel that statement, so that no work or lock wait of a
// request that gave up stays running there, and gives the statement up
// itself cancelGrace later. It differs from pgx's
// CancelRequestContextWatcherHandler in two ways:
//
//   - the cancel request waits for the server to close its connection, as
//     the protocol has it, however the statement ended meanwhile: PgBouncer
//     1.18 crashes when a client closes a cancel request's connection
//     before the pooler has passed it on (pgbouncer/pgbouncer#801), which
//     pgx does as soon as the statement returns;
//   - the connection is closed once the statement returns, so that the pool
//     opens another: a cancel request still on its way could otherwise end
//     the next statement run on it, and nothing waits for it.
type cancelOnDeadline struct {
	conn *pgconn.PgConn
}

func newCancelOnDeadline(c *pgconn.PgConn) ctxwatch.Handler { return &cancelOnDeadline{conn: c} }

func (h *cancelOnDeadline) HandleCancel(context.Context) {
	_ = h.conn.Conn().SetDeadline(time.Now().Add(cancelGrace))
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), cancelWait)
		defer cancel()
		_ = h.conn.CancelRequest(ctx)
	}()
}

func (h *cancelOnDeadline) HandleUnwatchAfterCancel() {
	_ = h.conn.Conn().Close()
	// pgconn still takes itself for open; the pool asks (confirmingConn)
	// before it hands the connection to the next statement.
	h.conn.CustomData()[closedAfterCancel] = true
}

// closedAfterCancel marks, in a connection's CustomData, a connection whose
// network connection cancelOnDeadline closed.
const closedAfterCancel = "pds.closed-after-cancel"
