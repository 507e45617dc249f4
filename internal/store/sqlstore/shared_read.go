package sqlstore

import (
	"context"
	"sync"
	"time"
)

// SharedRead runs one read for many callers, each of whom needs a read that
// started after it asked (a KeySync's read of the key change counter: a
// read that started earlier might not see a change committed before the
// caller arrived). A caller that finds no read under way runs one itself;
// one that finds a read under way waits for the next, which starts once
// that one has ended, and which every caller that arrived meanwhile
// shares. Under load a read answers every request that came in while the
// last one ran, instead of each request paying a read of its own.
type SharedRead struct {
	read func(context.Context) error
	// timeout bounds a read that others wait for (0: none); no single
	// caller's context may cut it short.
	timeout time.Duration

	mu      sync.Mutex
	reading bool         // a read is under way
	next    *sharedRound // the read that callers arriving now wait for
}

// sharedRound is one read, shared by the callers that asked before it
// started.
type sharedRound struct {
	done chan struct{}
	err  error
}

// NewSharedRead shares read between callers; timeout bounds a read that
// several callers wait for (0: none).
func NewSharedRead(read func(context.Context) error, timeout time.Duration) *SharedRead {
	return &SharedRead{read: read, timeout: timeout}
}

// Wait returns once a read that started after it was called has ended,
// with that read's error, or ctx's.
func (s *SharedRead) Wait(ctx context.Context) error {
	s.mu.Lock()
	if !s.reading {
		s.reading = true
		s.mu.Unlock()
		err := s.read(ctx)
		if r := s.takeNext(); r != nil {
			go s.serve(r)
		}
		return err
	}
	r := s.next
	if r == nil {
		r = &sharedRound{done: make(chan struct{})}
		s.next = r
	}
	s.mu.Unlock()
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// serve runs r and every read asked for while it ran, until none is.
func (s *SharedRead) serve(r *sharedRound) {
	for r != nil {
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		if s.timeout > 0 {
			ctx, cancel = context.WithTimeout(ctx, s.timeout)
		}
		r.err = s.read(ctx)
		cancel()
		close(r.done)
		r = s.takeNext()
	}
}

// takeNext returns the read asked for meanwhile, or nil after marking that
// no read is under way.
func (s *SharedRead) takeNext() *sharedRound {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.next
	s.next = nil
	if r == nil {
		s.reading = false
	}
	return r
}
