package sqlstore

import (
	"context"
	"sync/atomic"
)

// What the batches of calls share: the fetcher's Get Person batches
// (person_get_batch.go) and the creator's new persons
// (person_create_batch.go).

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
