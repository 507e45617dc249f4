package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/pds-dev/pds/internal/domain"
)

// Reading persons together (BatchedGets, PostgreSQL). Get Person
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

// The fetcher runs one batch at a time (batcher): the calls that arrive
// while a batch is at the server wait for it and go together next, where a
// second worker took many of them alone, a statement each: in pdsbench's
// Get Person row, two workers served a little less than one, at more of
// the server's CPU per request and a higher p99. (Before the key cache
// listened, one and two had served alike.)

// getCall is one Get Person waiting for its batch.
type getCall struct {
	batchCall
	accountID, id string
	// at is where the call's request may read (readsAt).
	at readAt
	// The answer: the person, or sql.ErrNoRows, or err.
	person *domain.Person
	err    error
}

// fetcher gathers getCalls into batches (batcher).
type fetcher struct {
	s *Store
	// byIDs reads the persons of an array of accounts ($1) and an array of
	// ids ($2), each with its position in the arrays (from 1) after the
	// aggregates.
	byIDs string
	*batcher[*getCall]
}

// BatchedGets reads the Get Person calls that arrive while a batch is under
// way as one statement, by one worker (fetcher): for an engine whose
// statements may take arrays of text parameters and unnest them
// (PostgreSQL), where each statement is a round trip to a server process.
var BatchedGets PersonGets = batchedGets{}

type batchedGets struct{}

func (batchedGets) start(s *Store) personGetter { return startFetcher(s) }

func startFetcher(s *Store) *fetcher {
	f := &fetcher{s: s, byIDs: personWithDetailsSQL(s.dialect, `unnest($1::text[], $2::text[]) WITH ORDINALITY AS k (account, person, n)
			JOIN persons p ON p.account_id = k.account AND p.id = k.person`, `TRUE`, `, k.n`)}
	// A batch's read never fails as a whole: each call holds its own
	// answer, so none runs alone.
	f.batcher = startBatcher(maxGetBatch, func(ctx context.Context, batch []*getCall) error {
		f.run(ctx, batch)
		return nil
	}, nil)
	return f
}

// get reads the person in the next batch.
func (f *fetcher) get(ctx context.Context, at readAt, accountID, id string) (*domain.Person, error) {
	p, err := f.fetch(ctx, at, accountID, id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, domain.NotFound("person", id)
	}
	return p, err
}

// fetch reads the person in the next batch; sql.ErrNoRows when the account
// holds no such person.
func (f *fetcher) fetch(ctx context.Context, at readAt, accountID, id string) (*domain.Person, error) {
	call := &getCall{accountID: accountID, id: id, at: at}
	if err := f.do(ctx, call); err != nil {
		return nil, err
	}
	return call.person, call.err
}

// run answers every call of batch, under ctx: on a replica that has caught
// up with every call's request (the highest floor), when every call may read
// one, else on the primary; again on the primary when the replica fails.
func (f *fetcher) run(ctx context.Context, batch []*getCall) {
	at := batch[0].at
	for _, call := range batch[1:] {
		at.replica = at.replica && call.at.replica
		at.floor = max(at.floor, call.at.floor)
	}
	err := f.s.safeReadAt(ctx, at, func(db *sql.DB) error {
		return f.read(ctx, querier{s: f.s, db: db}, batch)
	})
	if err != nil {
		for _, call := range batch {
			call.person, call.err = nil, err
		}
	}
}

// read answers every call of batch from q; an error is the whole batch's.
func (f *fetcher) read(ctx context.Context, q querier, batch []*getCall) error {
	if len(batch) == 1 {
		call := batch[0]
		call.person, call.err = readPerson(ctx, q, call.accountID, call.id)
		if errors.Is(call.err, sql.ErrNoRows) {
			return nil // an answer, not a failure
		}
		return call.err
	}
	accounts, ids := make([]string, len(batch)), make([]string, len(batch))
	for i, call := range batch {
		accounts[i], ids[i] = call.accountID, call.id
	}
	found := make([]*domain.Person, len(batch))
	err := func() error {
		rows, err := q.query(ctx, f.byIDs, accounts, ids)
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
	if err != nil {
		return err
	}
	for i, call := range batch {
		if found[i] == nil {
			call.person, call.err = nil, sql.ErrNoRows
		} else {
			call.person, call.err = found[i], nil
		}
	}
	return nil
}
