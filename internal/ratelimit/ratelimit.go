// Package ratelimit counts requests per key in fixed one-minute windows.
// Memory keeps the counts in the process (one SQLite instance); Shared keeps
// them in the database so that every instance draws on one budget.
package ratelimit

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Window is the length of one rate-limit window.
const Window = time.Minute

// Decision is the outcome of counting (or peeking at) one request.
type Decision struct {
	Allowed   bool
	Limit     int
	Remaining int
	Reset     time.Time // when the current window ends
}

// Limiter decides whether a key may make another request.
type Limiter interface {
	// Allow counts one request for key against limit at time now.
	Allow(ctx context.Context, key string, limit int, now time.Time) (Decision, error)
	// Peek reports the budget without counting a request.
	Peek(ctx context.Context, key string, limit int, now time.Time) (Decision, error)
}

func windowStart(now time.Time) time.Time { return now.Truncate(Window) }

func decide(count, limit int, now time.Time) Decision {
	return Decision{
		Allowed:   count <= limit,
		Limit:     limit,
		Remaining: max(0, limit-count),
		Reset:     windowStart(now).Add(Window),
	}
}

// Memory is a per-process limiter.
type Memory struct {
	mu      sync.Mutex
	windows map[string]window
}

type window struct {
	start time.Time
	count int
}

// NewMemory returns an empty in-process limiter.
func NewMemory() *Memory { return &Memory{windows: map[string]window{}} }

// Allow counts one request.
func (m *Memory) Allow(_ context.Context, key string, limit int, now time.Time) (Decision, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	start := windowStart(now)
	w := m.windows[key]
	if !w.start.Equal(start) {
		if len(m.windows) > 10000 {
			m.prune(start)
		}
		w = window{start: start}
	}
	w.count++
	m.windows[key] = w
	return decide(w.count, limit, now), nil
}

// Peek reports the budget without counting.
func (m *Memory) Peek(_ context.Context, key string, limit int, now time.Time) (Decision, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w := m.windows[key]
	count := 0
	if w.start.Equal(windowStart(now)) {
		count = w.count
	}
	d := decide(count, limit, now)
	d.Allowed = count < limit
	return d, nil
}

func (m *Memory) prune(current time.Time) {
	for k, w := range m.windows {
		if w.start.Before(current) {
			delete(m.windows, k)
		}
	}
}

// Counter is the part of the store the shared limiter uses.
type Counter interface {
	IncrementRate(ctx context.Context, keyID string, windowStart time.Time) (int, error)
	RateCount(ctx context.Context, keyID string, windowStart time.Time) (int, error)
	PruneRate(ctx context.Context, before time.Time) error
}

// Shared counts in the database, one row per key and window, so that all
// instances on one database share each key's budget.
type Shared struct {
	c         Counter
	lastPrune atomic.Int64
}

// NewShared returns a limiter over the database counter c.
func NewShared(c Counter) *Shared { return &Shared{c: c} }

// Allow counts one request with a single atomic upsert.
func (s *Shared) Allow(ctx context.Context, key string, limit int, now time.Time) (Decision, error) {
	start := windowStart(now)
	n, err := s.c.IncrementRate(ctx, key, start)
	if err != nil {
		return Decision{}, err
	}
	s.maybePrune(ctx, start)
	return decide(n, limit, now), nil
}

// Peek reads the current count.
func (s *Shared) Peek(ctx context.Context, key string, limit int, now time.Time) (Decision, error) {
	n, err := s.c.RateCount(ctx, key, windowStart(now))
	if err != nil {
		return Decision{}, err
	}
	d := decide(n, limit, now)
	d.Allowed = n < limit
	return d, nil
}

// maybePrune drops old windows at most once a window per process.
func (s *Shared) maybePrune(ctx context.Context, start time.Time) {
	last := s.lastPrune.Load()
	if start.UnixMilli() <= last || !s.lastPrune.CompareAndSwap(last, start.UnixMilli()) {
		return
	}
	_ = s.c.PruneRate(ctx, start.Add(-Window))
}
