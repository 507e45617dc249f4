package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// settle waits, before the rows, until the server has closed every burst
// that is due, as it would in the background before anyone measured it: a
// --reuse database holds those of the last run's writes (the seed closes
// its import's own). On PostgreSQL it then writes back what the seed and
// the closes dirtied (CHECKPOINT).
func settle(ctx context.Context, engine, database string, srv *process, logf func(string, ...any)) error {
	db, err := rawDB(engine, database)
	if err != nil {
		return err
	}
	defer db.Close()
	t0 := time.Now()
	for {
		var one int
		err := db.QueryRowContext(ctx, `SELECT 1 FROM bursts WHERE due_at <= $1 LIMIT 1`, time.Now().UnixMilli()).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			break
		}
		if err != nil {
			return fmt.Errorf("waiting for the server to close the due bursts: %w", err)
		}
		select {
		case <-srv.exited:
			return fmt.Errorf("%s exited (%v) while closing the due bursts:\n%s", srv.name, srv.exitErr, srv.logTail())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	logf("the server closed the due bursts in %s", time.Since(t0).Round(time.Millisecond))
	if engine != "postgres" {
		return nil
	}
	// The seed dirtied a great many pages that no measured request wrote.
	// Left to the background checkpoint, their write-back and its final
	// fsync land on whichever row runs then, and stall its commits, which
	// shows in that row's p99 (Append Breadcrumb's, in a full run). Settle
	// it first, for steadiness: a checkpoint writes pages back and changes
	// no statistics or plan. CHECKPOINT needs the pg_checkpoint role;
	// without it the run goes on unsettled.
	t0 = time.Now()
	if _, err := db.ExecContext(ctx, `CHECKPOINT`); err != nil {
		logf("not settled: CHECKPOINT failed (%v); the seed's write-back may land on a row", err)
	} else {
		logf("seed written back (CHECKPOINT) in %s", time.Since(t0).Round(time.Millisecond))
	}
	return nil
}
