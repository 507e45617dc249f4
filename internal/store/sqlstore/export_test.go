package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// HoldersQuery is the statement the upsert's identifier lookup runs, for the
// plan test; nil leaves an identifier out.
func HoldersQuery(accountID string, externalID, email, fID *string) (string, []any) {
	return holdersQuery(accountID, domain.Identifiers{ExternalID: externalID, Email: email, FID: fID}, holderColumns)
}

// TakenQuery is the statement with which an import asks which of a chunk's
// identifiers of one column are held, for the plan test.
func TakenQuery(accountID, column string, values []string) (string, []any) {
	return takenQuery(accountID, column, values)
}

// HoldersLockQuery is the statement with which a batch or an import chunk
// locks the persons its items name, for the plan test.
func HoldersLockQuery(accountID string, items []domain.Identifiers) (string, []any) {
	return holdersLockQuery(accountID, items, "")
}

// InTx runs fn in a write transaction (inTx), giving it the transaction's
// exec, for the group commit tests.
func (s *Store) InTx(ctx context.Context, fn func(exec func(query string, args ...any) error) error) error {
	return s.inTx(ctx, func(q querier) error {
		return fn(func(query string, args ...any) error {
			_, err := q.exec(ctx, query, args...)
			return err
		})
	})
}

// InTxAlone is InTx for a transaction of its own (inTxAlone).
func (s *Store) InTxAlone(ctx context.Context, fn func(exec func(query string, args ...any) error) error) error {
	return s.inTxAlone(ctx, func(q querier) error {
		return fn(func(query string, args ...any) error {
			_, err := q.exec(ctx, query, args...)
			return err
		})
	})
}

// InTxOnce is InTx for a function that must run only once (inTxOnce).
func (s *Store) InTxOnce(ctx context.Context, fn func(exec func(query string, args ...any) error) error) error {
	return s.inTxOnce(ctx, func(q querier) error {
		return fn(func(query string, args ...any) error {
			_, err := q.exec(ctx, query, args...)
			return err
		})
	})
}

// Reader is the store's read pool.
func (s *Store) Reader() *sql.DB { return s.r }

// StopFolding stops the background timeline fold, so that a test controls
// when deltas are folded (FoldTimelines) and counts only its own statements.
func (s *Store) StopFolding() { s.folder.close() }

// FoldingPaused tells whether the background fold waits for an import.
func (s *Store) FoldingPaused() bool { return s.folder.imports.Load() > 0 }

// Cover exposes cover for its table test: each span as [level, from, to].
func Cover(from, to int64) [][3]int64 {
	var out [][3]int64
	for _, s := range cover(from, to) {
		out = append(out, [3]int64{int64(s.level), s.from, s.to})
	}
	return out
}

// CreateUnlessHeldQuery is the statement of a new person's upsert on an
// engine with data-modifying WITH clauses, for the plan test.
func (s *Store) CreateUnlessHeldQuery(accountID string, externalID, email, fID *string) (string, []any) {
	ids := domain.Identifiers{ExternalID: externalID, Email: email, FID: fID}
	call := newCreateCall(accountID, domain.NewID(domain.PersonIDPrefix), attributes{Identifiers: ids},
		store.Write{Now: time.Now(), Window: time.Minute})
	return createUnlessHeldQuery(s.dialect, accountID, ids, call.person, call.burst, "")
}

// ReadsPersonsTogether says Get Person calls share statements (fetcher).
func (s *Store) ReadsPersonsTogether() bool {
	_, ok := s.gets.(*fetcher)
	return ok
}

// GetPersonsTogether reads the persons of the account with ids as one batch
// of the fetcher, for the plan test; an error unless each was found.
func (s *Store) GetPersonsTogether(ctx context.Context, accountID string, ids []string) error {
	batch := make([]*getCall, len(ids))
	for i, id := range ids {
		batch[i] = &getCall{batchCall: batchCall{ctx: ctx}, accountID: accountID, id: id}
	}
	s.gets.(*fetcher).run(ctx, batch)
	for _, call := range batch {
		if call.err != nil {
			return call.err
		}
	}
	return nil
}

// CreateTogether runs new persons of the given external ids as one batch
// of the creator, with the callers' context ctx, and returns each call's
// error once all are answered.
func (s *Store) CreateTogether(ctx context.Context, accountID string, externalIDs []string) []error {
	w := store.Write{Now: time.Now(), Window: time.Minute}
	batch := make([]*createCall, len(externalIDs))
	for i, ext := range externalIDs {
		call := newCreateCall(accountID, domain.NewID(domain.PersonIDPrefix), attributes{Identifiers: domain.Identifiers{ExternalID: &ext}}, w)
		call.ctx, call.done = ctx, make(chan struct{})
		batch[i] = call
	}
	s.creator.run(batch)
	errs := make([]error, len(batch))
	for i, call := range batch {
		<-call.done
		errs[i] = call.err
	}
	return errs
}

// AppendTogether runs the given breadcrumbs, each naming its person by one
// identifier, as one batch of the appender, each written at its time of
// at, and returns each one's holder ("" when nobody holds its identifier)
// and error once all are answered.
func (s *Store) AppendTogether(ctx context.Context, accounts []string, ins []domain.BreadcrumbInput, at []time.Time) ([]string, []error) {
	batch := make([]*appendCall, len(ins))
	for i, in := range ins {
		w := store.Write{Now: at[i], Window: time.Minute}
		batch[i] = &appendCall{batchCall: batchCall{ctx: ctx, done: make(chan struct{})}, b: newBreadcrumb(accounts[i], in, w), ids: in.Identifiers(), seenAt: at[i].UnixMilli()}
	}
	s.appender.run(batch)
	holders, errs := make([]string, len(batch)), make([]error, len(batch))
	for i, call := range batch {
		<-call.done
		holders[i], errs[i] = call.personID, call.err
	}
	return holders, errs
}

// LoseBatchAnswers has every batch of the creator and the appender hear of
// its statement, once it committed, the error a connection lost at the
// commit gives, so that each call runs alone after it.
func (s *Store) LoseBatchAnswers() {
	lose := func(err error) error {
		if err == nil {
			return errors.New("test: the connection was lost at the batch's commit")
		}
		return err
	}
	s.creator.loseAnswer, s.appender.loseAnswer = lose, lose
}

// LoseNextClaimAnswer has the next claim of bursts hear, once its statement
// committed, the error a connection lost at the commit gives.
func (s *Store) LoseNextClaimAnswer() {
	s.loseClaim = func(err error) error {
		s.loseClaim = nil
		if err == nil {
			return errors.New("test: the connection was lost at the claim's commit")
		}
		return err
	}
}

// BeforeMatchWrite has fn run between the read a matched upsert decides on
// and its write (matchHeld); nil for none.
func (s *Store) BeforeMatchWrite(fn func()) { s.beforeMatchWrite = fn }

// EraseOnePart runs one transaction of an erasure, as ErasePerson's loop
// does, and reports whether it finished the erasure: a test stops there to
// stand for a crash between chunks.
func (s *Store) EraseOnePart(ctx context.Context, accountID, personID string, in domain.EraseRequest, now time.Time) (bool, error) {
	var done bool
	err := s.inTxAlone(ctx, func(q querier) error {
		var err error
		_, done, err = erasePart(ctx, q, accountID, personID, in, now)
		return err
	})
	return done, err
}

// ReadSecretsInTx runs steps in one write transaction, each a read of the
// account's suppression secret, a step true suppressing v before its read.
// It returns whether each read found a secret, and the statements each step
// ran as statements counts them.
func (s *Store) ReadSecretsInTx(ctx context.Context, accountID string, v domain.SuppressedValue, steps []bool,
	statements func() int64) (found []bool, ran []int64, err error) {
	err = s.inTxAlone(ctx, func(q querier) error {
		found, ran = nil, nil
		for _, suppressFirst := range steps {
			before := statements()
			if suppressFirst {
				if err := suppress(ctx, q, accountID, []domain.SuppressedValue{v}, "key_test", time.Now()); err != nil {
					return err
				}
			}
			secret, err := s.suppressionSecret(ctx, q, accountID)
			if err != nil {
				return err
			}
			found, ran = append(found, secret != nil), append(ran, statements()-before)
		}
		return nil
	})
	return found, ran, err
}
