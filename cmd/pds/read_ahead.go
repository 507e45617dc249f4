package main

import (
	"iter"
	"sync"
)

// readAhead runs seq in a goroutine of its own, up to two batches of batch
// items ahead of the caller, and hands its items over in order, an error
// after the items before it. The second pass of pds import persons decodes
// its lines this way, beside the store's writes instead of between them:
// decoding a large import's lines keeps a core busy for a while. A caller
// that stops early stops seq too, and nothing is left running when the
// sequence returns.
func readAhead[T any](seq iter.Seq2[T, error], batch int) iter.Seq2[T, error] {
	type part struct {
		items []T
		err   error
	}
	return func(yield func(T, error) bool) {
		parts := make(chan part, 2)
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(parts)
			send := func(p part) bool {
				select {
				case parts <- p:
					return true
				case <-done:
					return false
				}
			}
			items := make([]T, 0, batch)
			for item, err := range seq {
				if err != nil {
					send(part{items, err})
					return
				}
				if items = append(items, item); len(items) == batch {
					if !send(part{items: items}) {
						return
					}
					items = make([]T, 0, batch)
				}
			}
			if len(items) > 0 {
				send(part{items: items})
			}
		}()
		defer func() {
			close(done)
			wg.Wait()
		}()
		for p := range parts {
			for _, item := range p.items {
				if !yield(item, nil) {
					return
				}
			}
			if p.err != nil {
				var zero T
				yield(zero, p.err)
				return
			}
		}
	}
}
