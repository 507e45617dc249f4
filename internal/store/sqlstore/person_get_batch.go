package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"sync"

	"github.com/pds-dev/pds/internal/domain"
)

// Reading persons together (Dialect.PersonArrays, PostgreSQL). Get Person
// is one statement, but on PostgreSQL each statement is also a round trip
// to a server process, and under concurrent reads the statement's fixed
// price (the wake-ups of both sides, the protocol, the executor's start and
// database/sql's own bookkeeping) costs more than reading the person. The
// fetcher reads the Get Person calls that arrive while a batch is under way
// as one statement: a batch of one is the single statement as before.
//
// A batch starts after each of its calls arrived, so a read still sees
// every write committed before its request came in.

// maxGetBatch bounds the persons of one statement.
const maxGetBatch = 64

// getWorkers is how many batches run at once.
//
// One: the calls that arrive while a batch is at the server wait for it
// and go together next, where a second worker took many of them alone, a
// statement each. Row 6 of pdsbench at 1M persons, by wrk, in turns: 0.291
// and 0.305 of the bare handler with one (server CPU 71 and 66 µs a
// request, p99 11.8 and 9.9 ms), 0.280 and 0.281 with two (83 and 75 µs,
// 13.4 and 11.4 ms). Measured before the key cache listened, one and two
// had served alike (0.297 and 0.301 against 0.277 and 0.301).
const getWorkers = 1

// getCall is one Get Person waiting for its batch.
type getCall struct {
	ctx           context.Context
	accountID, id string
	// The answer: the person, or sql.ErrNoRows, or err.
	person *domain.Person
	err    error
	done   chan struct{}
}

func (c *getCall) callerCtx() context.Context { return c.ctx }

// fetcher gathers getCalls into batches, run by getWorkers workers.
type fetcher struct {
	s     *Store
	calls chan *getCall
	quit  chan struct{}
	stop  sync.Once
	wg    sync.WaitGroup
}

func startFetcher(s *Store, workers int) *fetcher {
	f := &fetcher{s: s, calls: make(chan *getCall), quit: make(chan struct{})}
	for range workers {
		f.wg.Add(1)
		go f.work()
	}
	return f
}

// close stops the workers once their batches are answered; closing again
// does nothing.
func (f *fetcher) close() {
	f.stop.Do(func() { close(f.quit) })
	f.wg.Wait()
}

// get reads the person in the next batch; sql.ErrNoRows when the account
// holds no such person.
func (f *fetcher) get(ctx context.Context, accountID, id string) (*domain.Person, error) {
	call := &getCall{ctx: ctx, accountID: accountID, id: id, done: make(chan struct{})}
	select {
	case f.calls <- call:
	case <-f.quit:
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case <-call.done:
		return call.person, call.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (f *fetcher) work() {
	defer f.wg.Done()
	var batch []*getCall
	for {
		var ok bool
		if batch, ok = gather(batch[:0], f.calls, f.quit, maxGetBatch); !ok {
			return
		}
		f.run(batch)
		for _, call := range batch {
			close(call.done)
		}
		clear(batch)
	}
}

// run answers every call of batch.
func (f *fetcher) run(batch []*getCall) {
	ctx, stop := whileAnyWaits(batch)
	defer stop()
	q := f.s.reader()
	if len(batch) == 1 {
		call := batch[0]
		call.person, call.err = readPerson(ctx, q, call.accountID, call.id)
		return
	}
	accounts, ids := make([]string, len(batch)), make([]string, len(batch))
	for i, call := range batch {
		accounts[i], ids[i] = call.accountID, call.id
	}
	found := make([]*domain.Person, len(batch))
	err := func() error {
		rows, err := q.query(ctx, f.s.personReads.byIDs, accounts, ids)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var n int
			p, err := scanPersonWithDetails(rows, &n)
			if err != nil {
				return err
			}
			if n < 1 || n > len(batch) {
				return errors.New("sqlstore: a batch read answered a position it was not asked for")
			}
			found[n-1] = p
		}
		return rows.Err()
	}()
	for i, call := range batch {
		switch {
		case err != nil:
			call.err = err
		case found[i] == nil:
			call.err = sql.ErrNoRows
		default:
			call.person = found[i]
		}
	}
}
