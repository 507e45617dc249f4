// Package outage tells an operator when the database stops serving and when
// it serves again: one log line as an outage begins and one as it ends,
// however many requests and background passes fail in between.
package outage

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pds-dev/pds/internal/clock"
	"github.com/pds-dev/pds/internal/domain"
)

// Log follows the outages of one process, one per cause: a disk that fills
// while the database is otherwise reachable is an outage of its own, which
// only a write can end. The zero value is not usable; see New.
type Log struct {
	log   *slog.Logger
	clock clock.Clock
	// any is set while an outage is under way, so that Served, called for
	// every answered request, costs one atomic load the rest of the time.
	any atomic.Bool
	mu  sync.Mutex
	// open holds the outages under way.
	open map[domain.Cause]*spell
}

type spell struct {
	since, last time.Time // the first and the latest failure
	failed      int
}

// quiet is how long an outage must have failed nothing before work served
// ends it: as a database stops or starts, work that failed and work that
// succeeded come mixed for a moment, and one outage is one outage.
const quiet = 500 * time.Millisecond

// New returns a Log writing to log, timing outages by clk.
func New(log *slog.Logger, clk clock.Clock) *Log {
	return &Log{log: log, clock: clk, open: map[domain.Cause]*spell{}}
}

// A nil *Log records nothing.

// Failed records work that failed for e's cause (a request refused, a pass
// of the webhook worker), logging the outage's start when it is the first.
func (l *Log) Failed(e *domain.UnavailableError) {
	if l == nil {
		return
	}
	l.mu.Lock()
	sp := l.open[e.Cause]
	first := sp == nil
	if first {
		sp = &spell{since: l.clock.Now()}
		l.open[e.Cause] = sp
		l.any.Store(true)
	}
	sp.failed++
	sp.last = l.clock.Now()
	l.mu.Unlock()
	if first {
		l.log.Error("database outage began", "cause", string(e.Cause), "error", e.Err.Error(),
			"meanwhile", "requests that need the database are refused with 503")
	}
}

// Served records that the database did work again: a write ends every
// outage that failed nothing for a moment (quiet), a read every such outage
// but a full disk's.
func (l *Log) Served(wrote bool) {
	if l == nil || !l.any.Load() {
		return
	}
	l.mu.Lock()
	type ended struct {
		cause domain.Cause
		sp    *spell
	}
	var done []ended
	now := l.clock.Now()
	for cause, sp := range l.open {
		if (wrote || cause != domain.CauseDiskFull) && now.Sub(sp.last) >= quiet {
			done = append(done, ended{cause, sp})
			delete(l.open, cause)
		}
	}
	l.any.Store(len(l.open) > 0)
	l.mu.Unlock()
	for _, e := range done {
		l.log.Warn("database outage ended", "cause", string(e.cause),
			"failing_ms", e.sp.last.Sub(e.sp.since).Milliseconds(), "failures", e.sp.failed)
	}
}
