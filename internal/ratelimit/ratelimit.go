// Package ratelimit counts requests per key in fixed one-minute windows.
// Memory keeps the counts in the process (one SQLite instance); Shared keeps
// them in the database so that every instance draws on one budget.
package ratelimit

import (
	"context"
	"fmt"
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

// ResetIn is the whole seconds until the window ends, at least 1: what
// RateLimit's t and a refusal's Retry-After say.
func (d Decision) ResetIn(now time.Time) int { return max(1, int(d.Reset.Sub(now).Seconds()+0.999)) }

// Refusal is the sentence that refuses a request over the budget, the
// same from every face.
func (d Decision) Refusal(now time.Time) string {
	return fmt.Sprintf("This key has used its %d requests for this minute; retry after %d seconds.", d.Limit, d.ResetIn(now))
}

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
	// LeaseRate takes up to want requests of the key's budget of limit in
	// a window, atomically min(want, limit - taken), and returns what it
	// took and what every instance has taken in the window.
	LeaseRate(ctx context.Context, keyID string, windowStart time.Time, limit, want int) (granted, taken int, err error)
	RateCount(ctx context.Context, keyID string, windowStart time.Time) (int, error)
	PruneRate(ctx context.Context, before time.Time) error
}

// Shared keeps each key's budget in the database, so that all instances on
// one database share it, without a statement per request: an instance
// leases a slice of the key's budget for the current window (one atomic
// upsert that takes min(slice, limit - taken)) and counts requests out of
// it in memory; when the slice is spent it leases the next. Together the
// instances never grant more than the limit.
//
// The price is at the edges: what an instance leased and did not spend by
// the end of the window is lost, so a key served by n instances can be
// refused up to n slices short of its limit. Slices start at one request
// in each window and double while the key keeps spending them, up to a
// sixteenth of the limit (at most 1024): a key with a limit of 16 or less
// leases one request at a time, exactly as if each were counted in the
// database.
type Shared struct {
	c         Counter
	mu        sync.Mutex
	leases    map[string]*lease
	lastPrune atomic.Int64
}

// lease is one instance's share of one key's budget in one window.
type lease struct {
	mu    sync.Mutex
	start time.Time // the window
	limit int       // the limit it was leased against
	avail int       // leased by this instance and not yet spent
	taken int       // what every instance had taken at this instance's last lease
	next  int       // the size of the next slice
}

// Store is a store that counts requests and says whether its instances
// must share one budget per key (store.Store does).
type Store interface {
	Counter
	// SharesBudgets says that several instances may serve from this
	// store, so that a key's budget must be counted in it.
	SharesBudgets() bool
}

// For is the limiter a server on st needs: budgets in the database when
// its instances share them, in the process otherwise (one instance by
// nature), which spares every request a statement.
func For(st Store) Limiter {
	if st.SharesBudgets() {
		return NewShared(st)
	}
	return NewMemory()
}

// NewShared returns a limiter over the database counter c.
func NewShared(c Counter) *Shared { return &Shared{c: c, leases: map[string]*lease{}} }

// maxSlice is the largest slice of a limit an instance leases at once.
func maxSlice(limit int) int { return min(max(1, limit/16), 1024) }

// Allow counts one request against the key's budget, leasing the next
// slice from the database when this instance's share is spent.
func (s *Shared) Allow(ctx context.Context, key string, limit int, now time.Time) (Decision, error) {
	start := windowStart(now)
	s.maybePrune(ctx, start)
	l := s.lease(key, start)
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.start.Equal(start) || l.limit != limit {
		l.start, l.limit, l.avail, l.taken, l.next = start, limit, 0, 0, 1
	}
	if l.avail == 0 && l.taken < limit {
		granted, taken, err := s.c.LeaseRate(ctx, key, start, limit, l.next)
		if err != nil {
			return Decision{}, err
		}
		l.avail, l.taken = granted, taken
		l.next = min(2*l.next, maxSlice(limit))
	}
	d := Decision{Limit: limit, Reset: start.Add(Window)}
	if l.avail > 0 {
		l.avail--
		d.Allowed = true
	}
	d.Remaining = remaining(limit, l.taken, l.avail)
	return d, nil
}

// remaining is what the key has left as this instance knows it: the limit
// less what every instance had taken at this instance's last lease, plus
// what this instance holds unspent. Another instance's later leases show
// only from this instance's next lease on.
func remaining(limit, taken, avail int) int { return max(0, limit-taken+avail) }

// Peek reports the budget without counting a request.
func (s *Shared) Peek(ctx context.Context, key string, limit int, now time.Time) (Decision, error) {
	start := windowStart(now)
	taken, err := s.c.RateCount(ctx, key, start)
	if err != nil {
		return Decision{}, err
	}
	avail := 0
	s.mu.Lock()
	l := s.leases[key]
	s.mu.Unlock()
	if l != nil {
		l.mu.Lock()
		if l.start.Equal(start) && l.limit == limit {
			avail = l.avail
		}
		l.mu.Unlock()
	}
	return Decision{Allowed: avail > 0 || taken < limit, Limit: limit, Remaining: remaining(limit, taken, avail),
		Reset: start.Add(Window)}, nil
}

// lease returns the key's lease, dropping those of past windows when the
// map grows large.
func (s *Shared) lease(key string, start time.Time) *lease {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.leases[key]
	if l == nil {
		if len(s.leases) >= 10000 {
			for k, old := range s.leases {
				// A lease in use is current anyway: pass over it.
				if old.mu.TryLock() {
					if old.start.Before(start) {
						delete(s.leases, k)
					}
					old.mu.Unlock()
				}
			}
		}
		l = &lease{}
		s.leases[key] = l
	}
	return l
}

// maybePrune drops old windows at most once a window per process.
func (s *Shared) maybePrune(ctx context.Context, start time.Time) {
	last := s.lastPrune.Load()
	if start.UnixMilli() <= last || !s.lastPrune.CompareAndSwap(last, start.UnixMilli()) {
		return
	}
	_ = s.c.PruneRate(ctx, start.Add(-Window))
}

// Failures counts failed authentications (a bad API key, a bad console
// sign-in, link or session) per client address, in the same fixed
// one-minute windows, for this process: an address that has spent its
// budget is refused before its next attempt costs a database read, so that
// guessing, hopeless as it is, costs neither load nor a line of log per
// key tried. One Failures serves both faces, so that an address has one
// budget whichever it tries.
//
// A failure is counted and checked against the budget at once (Failed):
// attempts that passed Check together, before any of them failed, are
// answered as failures only as far as the budget goes, and the rest as
// refusals. Reserving the budget before the key is read would refuse a
// client's good keys whenever more of its requests than the budget were
// under way at once.
type Failures struct {
	mu       sync.Mutex
	windows  map[string]window
	limit    int
	observer FailureObserver
}

// FailureObserver hears of every failed authentication counted, and of
// every request refused for its address's spent budget, by face ("api",
// "console").
type FailureObserver interface {
	AuthFailed(face string)
	AuthThrottled(face string)
}

// NewFailures allows each address limit failed authentications a window.
func NewFailures(limit int) *Failures { return &Failures{windows: map[string]window{}, limit: limit} }

// Observe makes o hear of failures and refusals; call it before serving.
func (f *Failures) Observe(o FailureObserver) { f.observer = o }

// Check says whether addr may try to authenticate now; when it may not,
// the Decision's Reset says when it may again, and the refusal is counted.
func (f *Failures) Check(face, addr string, now time.Time) Decision {
	d := f.count(addr, now, false)
	if !d.Allowed && f.observer != nil {
		f.observer.AuthThrottled(face)
	}
	return d
}

// Failed counts a failed authentication from addr and says whether it was
// within the budget: when it was not (others from the address failed
// while it was checked), it is to be answered as a refusal, as the next
// attempt would be.
func (f *Failures) Failed(face, addr string, now time.Time) Decision {
	d := f.count(addr, now, true)
	if f.observer != nil {
		f.observer.AuthFailed(face)
		if !d.Allowed {
			f.observer.AuthThrottled(face)
		}
	}
	return d
}

// count reads addr's failures in the window of now, adding one first when
// add is set, and decides: within the budget while fewer than the limit
// had failed before.
func (f *Failures) count(addr string, now time.Time, add bool) Decision {
	f.mu.Lock()
	defer f.mu.Unlock()
	start := windowStart(now)
	w := f.windows[addr]
	if !w.start.Equal(start) {
		if len(f.windows) > 10000 {
			for k, old := range f.windows {
				if old.start.Before(start) {
					delete(f.windows, k)
				}
			}
		}
		w = window{start: start}
	}
	before := w.count
	if add {
		w.count++
		f.windows[addr] = w
	}
	d := decide(before+1, f.limit, now)
	d.Remaining = max(0, f.limit-w.count)
	return d
}

// ThrottledRefusal is the sentence that refuses an address that has spent
// its budget of failures, the same from every face.
func (d Decision) ThrottledRefusal(now time.Time) string {
	return fmt.Sprintf("This address has failed to authenticate %d times this minute; retry after %d seconds.", d.Limit, d.ResetIn(now))
}
