package sqlstore

import (
	"context"
	"sync"
	"sync/atomic"
)

// What the batches of calls share: the fetcher's Get Person batches
// (postgres_get_batch.go), the creator's new persons
// (postgres_create_batch.go) and the appender's breadcrumbs
// (postgres_append_batch.go).

// gather waits for a first call, then takes every call already waiting, up
// to max in all; false once quit is closed.
func gather[T any](batch []T, calls <-chan T, quit <-chan struct{}, max int) ([]T, bool) {
	select {
	case call := <-calls:
		batch = append(batch, call)
	case <-quit:
		return batch, false
	}
	for len(batch) < max {
		select {
		case call := <-calls:
			batch = append(batch, call)
		default:
			return batch, true
		}
	}
	return batch, true
}

// aCall is a call waiting for its batch; callerCtx is its caller's context.
type aCall interface{ callerCtx() context.Context }

// whileAnyWaits is a context that ends once every call of batch has
// stopped waiting for its answer (its caller's context ended), so that a
// batch stuck on the server is cancelled as each caller's statement would
// have been, but not while anyone still waits for it.
func whileAnyWaits[T aCall](batch []T) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var waiting atomic.Int64
	waiting.Store(int64(len(batch)))
	stops := make([]func() bool, len(batch))
	for i, call := range batch {
		stops[i] = context.AfterFunc(call.callerCtx(), func() {
			if waiting.Add(-1) == 0 {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}

// batchCall is what every call of a batcher carries.
type batchCall struct {
	// ctx is the caller's: a batch runs while any of its callers waits.
	ctx  context.Context
	done chan struct{} // closed once the call is answered
}

func (c *batchCall) callerCtx() context.Context { return c.ctx }
func (c *batchCall) base() *batchCall           { return c }

// batched is a call type of a batcher: a struct embedding batchCall.
type batched interface {
	aCall
	base() *batchCall
}

// batcher runs the calls that arrive while a batch is under way as the
// next batch, one batch at a time: together answers every call of a
// batch, in one statement and one commit, or fails and commits nothing;
// then alone (nil for a together that never fails) answers each call of
// the batch on its own, side by side on the pool while the next batch goes
// on. The batch's statement is
// cancelled once none of its callers waits any more (a stalled connection
// would otherwise hold up every call behind it); a call run alone has its
// caller's context, as without batches.
type batcher[T batched] struct {
	max      int
	together func(context.Context, []T) error
	alone    func(T)
	calls    chan T
	quit     chan struct{}
	stop     sync.Once
	wg       sync.WaitGroup
	// loseAnswer, set by tests only, turns what together returned into
	// what the batch hears, as a connection lost at the commit does.
	loseAnswer func(error) error
}

func startBatcher[T batched](max int, together func(context.Context, []T) error, alone func(T)) *batcher[T] {
	b := &batcher[T]{max: max, together: together, alone: alone, calls: make(chan T), quit: make(chan struct{})}
	b.wg.Add(1)
	go b.work()
	return b
}

// close stops the worker once its batch is answered; closing again does
// nothing.
func (b *batcher[T]) close() {
	b.stop.Do(func() { close(b.quit) })
	b.wg.Wait()
}

// do runs call in the next batch and waits for its answer, which is the
// call's to hold. A caller whose context ends first is answered with its
// error; what its call writes may still be written, as when a client goes
// away while its statement commits.
func (b *batcher[T]) do(ctx context.Context, call T) error {
	c := call.base()
	c.ctx, c.done = ctx, make(chan struct{})
	select {
	case b.calls <- call:
	case <-b.quit:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (b *batcher[T]) work() {
	defer b.wg.Done()
	var batch []T
	for {
		var ok bool
		if batch, ok = gather(batch[:0], b.calls, b.quit, b.max); !ok {
			return
		}
		b.run(batch)
		clear(batch)
	}
}

// run answers every call of batch, together or, when that fails, alone.
// A batch that failed may have committed all the same (its connection lost
// at the commit, or the commit not confirmed by the synchronous standbys in
// time), so each alone must tell its own earlier write, by the id the call
// carries, from someone else's.
func (b *batcher[T]) run(batch []T) {
	ctx, stop := whileAnyWaits(batch)
	defer stop()
	err := b.together(ctx, batch)
	if b.loseAnswer != nil {
		err = b.loseAnswer(err)
	}
	if err == nil {
		for _, call := range batch {
			close(call.base().done)
		}
		return
	}
	for _, call := range batch {
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			b.alone(call)
			close(call.base().done)
		}()
	}
}
