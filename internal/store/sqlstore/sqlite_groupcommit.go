package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Group commit. An engine with one writer connection (SQLite) commits one
// transaction at a time, and each commit waits for the disk. The committer
// runs the write transactions of many callers inside one database
// transaction instead, each inside a savepoint of its own so that a caller's
// error undoes only its own work, commits once and only then answers every
// caller: an acknowledged write is exactly as durable as before, and the
// wait for the disk is shared.
//
// A savepoint has a price: SQLite copies every page changed under it into
// its statement journal, in memory, to be able to roll back to it, and the
// SAVEPOINT and RELEASE are statements of their own. For a caller that
// fills a commit by itself (a batch of a hundred persons) it is most of the
// work, so such a caller runs alone (runAlone): without a savepoint, in a
// transaction that only other such callers queued with it share (each one's
// error rolls it back whole, and each runs again in a transaction of its
// own). For the many small callers of a batch it is a smaller but still
// noticeable part of the writer's time, and most batches have no caller
// that fails, so a batch runs first without savepoints (optimistic):
// should any caller fail, or panic, the transaction is rolled back whole,
// nothing of it committed, and the batch runs again with a savepoint per
// caller (runGuarded), as do the next few batches.
//
// So a caller's function may run more than once, each run but the last
// rolled back: it must set what it hands back afresh on every run. One
// that cannot run twice (an import reading its input as it goes) runs with
// runOnce, in a transaction shared with no one.

const (
	// maxBatchJobs and maxBatchTime bound a batch, so that a caller's
	// answer does not wait behind an unbounded queue.
	maxBatchJobs = 64
	maxBatchTime = 10 * time.Millisecond
	// maxLinger bounds how long a batch whose queue ran dry waits for the
	// callers of the last batch to come back (lingers).
	maxLinger = time.Millisecond
)

// ErrClosed answers a write submitted to, or queued in, a closed Store.
var ErrClosed = errors.New("sqlstore: store closed")

// txJob is one caller's write transaction.
type txJob struct {
	ctx  context.Context
	fn   func(q querier) error
	done chan error
	// panicked holds what fn panicked with, re-panicked in the caller.
	panicked any
	err      error
	// alone runs the job in a transaction of its own, without a savepoint.
	alone bool
	// once (with alone) keeps the job out of any transaction shared with
	// another job: fn cannot run a second time.
	once bool
	// outside (with alone and once) runs fn on the writer's connection
	// between two transactions, in none (runOutside).
	outside bool
	// state says whether the committer has begun running fn (taken),
	// after which the caller waits for the answer, or the caller gave up
	// waiting first (abandoned), after which fn never runs: fn sets the
	// caller's results, which the caller must not read while fn runs.
	state atomic.Int32
}

const (
	jobQueued int32 = iota
	jobTaken
	jobAbandoned
)

// gone returns the error a job ends with without running fn: its caller's
// context ended (and the caller may have stopped waiting). Otherwise the
// job is taken: its caller waits for its answer from now on.
func (j *txJob) gone() error {
	if err := j.ctx.Err(); err != nil {
		return err
	}
	if j.state.CompareAndSwap(jobQueued, jobTaken) || j.state.Load() == jobTaken {
		return nil
	}
	return j.ctx.Err()
}

type committer struct {
	s       *Store
	jobs    chan *txJob
	quit    chan struct{}
	stopped chan struct{}
	stop    sync.Once
	batch   []*txJob
	// held is a job to run alone that a batch took from the queue while
	// gathering jobs; it runs next.
	held *txJob
	// guarded counts the batches still to run with savepoints from the
	// start (see runBatch).
	guarded int
	// lastBatch is how many jobs the last batch committed.
	lastBatch int
}

// lingers says whether a batch of n jobs whose queue ran dry waits for
// more: while it holds fewer jobs than the last batch did, and not past
// deadline. Writers that were just answered mostly write again (a client's
// pool of connections, a sync job): a batch that ends as soon as the queue
// is empty takes the first of them back and leaves the others to the next
// batch, so a steady load splits into two halves that take turns, each
// paying a wait for the disk. Waiting a moment for the rest shares that
// wait again. A lone writer is never held: its last batch held one job.
func lingers(n, last int, now, deadline time.Time) bool {
	return n < last && now.Before(deadline)
}

// nextJob takes the next queued job, waiting for one until deadline when
// lingers says so; nil when there is none.
func (c *committer) nextJob(n int, deadline *time.Time) *txJob {
	select {
	case j := <-c.jobs:
		return j
	default:
	}
	now := time.Now()
	if deadline.IsZero() {
		*deadline = now.Add(maxLinger)
	}
	if !lingers(n, c.lastBatch, now, *deadline) {
		return nil
	}
	t := time.NewTimer(deadline.Sub(now))
	defer t.Stop()
	select {
	case j := <-c.jobs:
		return j
	case <-t.C:
		return nil
	}
}

func newCommitter(s *Store) *committer {
	c := &committer{s: s, jobs: make(chan *txJob), quit: make(chan struct{}), stopped: make(chan struct{})}
	go c.loop()
	return c
}

// run submits fn and waits for its answer, which comes after the batch it
// ran in committed (or failed). A caller whose context ends while waiting
// to be taken is answered at once, and fn does not run.
func (c *committer) run(ctx context.Context, fn func(q querier) error) error {
	return c.submit(&txJob{ctx: ctx, fn: fn, done: make(chan error, 1)})
}

// runAlone submits fn to run in a transaction of its own, with no
// savepoint: an error from fn rolls back the whole transaction. Its answer
// comes after that transaction committed (or failed).
func (c *committer) runAlone(ctx context.Context, fn func(q querier) error) error {
	return c.submit(&txJob{ctx: ctx, fn: fn, done: make(chan error, 1), alone: true})
}

// runOnce is runAlone for an fn that cannot run twice: its transaction is
// shared with no other job, so only fn's own failure ends it.
func (c *committer) runOnce(ctx context.Context, fn func(q querier) error) error {
	return c.submit(&txJob{ctx: ctx, fn: fn, done: make(chan error, 1), alone: true, once: true})
}

// runOutside submits fn to run on the writer's connection outside any
// transaction: after the transaction under way, before the next. fn's
// querier is the writer's pool, whose one connection is then free.
func (c *committer) runOutside(ctx context.Context, fn func(q querier) error) error {
	return c.submit(&txJob{ctx: ctx, fn: fn, done: make(chan error, 1), alone: true, once: true, outside: true})
}

func (c *committer) submit(j *txJob) error {
	ctx := j.ctx
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case c.jobs <- j:
	case <-c.quit:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	// A caller whose deadline passes while its job waits for its turn (a
	// batch held up by a lock another process holds, a disk that does not
	// answer) stops waiting, and its fn never runs. Once fn runs, the
	// caller waits for it: fn's statements run under the same context, so
	// they end as soon as it does.
	select {
	case err := <-j.done:
		return j.answered(err)
	case <-ctx.Done():
		if j.state.CompareAndSwap(jobQueued, jobAbandoned) {
			return ctx.Err()
		}
		return j.answered(<-j.done)
	}
}

// answered re-panics what fn panicked with, in its caller.
func (j *txJob) answered(err error) error {
	if j.panicked != nil {
		panic(j.panicked)
	}
	return err
}

// close stops the committer once the batch under way is answered; callers
// still waiting are answered with ErrClosed.
func (c *committer) close() {
	c.stop.Do(func() { close(c.quit) })
	<-c.stopped
}

func (c *committer) loop() {
	defer close(c.stopped)
	for {
		if j := c.held; j != nil {
			c.held = nil
			if j.alone {
				c.runAloneJobs(j)
			} else {
				c.runBatch(j)
			}
			continue
		}
		select {
		case j := <-c.jobs:
			if j.alone {
				c.runAloneJobs(j)
			} else {
				c.runBatch(j)
			}
		case <-c.quit:
			for {
				select {
				case j := <-c.jobs:
					j.done <- ErrClosed
				default:
					return
				}
			}
		}
	}
}

// runBatch runs first and whatever else is queued, without waiting for
// more, in one transaction, commits it and answers each job.
//
// The batch runs first without savepoints (optimistic): a job that fails
// rolls the whole transaction back, nothing of it committed, and the batch
// runs again with a savepoint per job (runGuarded), where each job's error
// undoes only its own work. After such a failure the next batches run with
// savepoints from the start, since a load that refuses some of its writes
// would otherwise pay for most of its batches twice.
func (c *committer) runBatch(first *txJob) {
	batch := append(c.batch[:0], first)
	defer func() {
		clear(batch)
		c.batch = batch[:0]
	}()
	if c.guarded > 0 {
		c.guarded--
		batch = c.runGuarded(batch, true)
		return
	}
	batch, failed, err := c.runTx(batch, true, false)
	if failed == nil {
		answer(batch, err)
		return
	}
	c.guarded = guardedBatches
	// A job that panicked is answered with its panic now rather than run
	// again: what it wrote is rolled back with the rest.
	again := batch[:0:0]
	for _, j := range batch {
		if j.panicked != nil {
			j.done <- j.err
		} else {
			again = append(again, j)
		}
	}
	if len(again) > 0 {
		c.runGuarded(again, false)
	}
}

// guardedBatches is how many batches run with savepoints from the start
// after an optimistic batch failed.
const guardedBatches = 16

// runGuarded runs batch (and, when more is set, whatever else is queued)
// with a savepoint per job, commits it and answers each job. It returns
// the jobs it took.
func (c *committer) runGuarded(batch []*txJob, more bool) []*txJob {
	batch, culprit, err := c.runTx(batch, more, true)
	if culprit == nil {
		answer(batch, err)
		return batch
	}
	// One job broke the transaction, and with it the work of the others,
	// which is undone and unanswered: run them again, once, without it.
	if culprit.err == nil {
		culprit.err = err
	}
	var again []*txJob
	for _, j := range batch {
		if j.err != nil {
			j.done <- j.err
		} else {
			again = append(again, j)
		}
	}
	if len(again) > 0 {
		again, _, err = c.runTx(again, false, true)
		answer(again, err)
	}
	return batch
}

// answer gives each job its own error, or err, the outcome of the
// transaction it ran in.
func answer(batch []*txJob, err error) {
	for _, j := range batch {
		if j.err != nil {
			j.done <- j.err
		} else {
			j.done <- err
		}
	}
}

// runTx runs batch, and when more is set whatever else is queued up to the
// bounds of a batch, in one transaction, and commits it. It returns the jobs
// it ran and the transaction's error. With savepoints each job runs in one
// (runJob), and failed is the job, if any, after which the transaction was
// found broken; without, each job runs bare (runBare), and failed is the
// first job that returned an error. Either way, when failed is set nothing
// of the transaction is kept and only failed has run to its end with an
// answer that counts (j.err); the jobs after it have not run.
func (c *committer) runTx(batch []*txJob, more, savepoints bool) (ran []*txJob, failed *txJob, err error) {
	tx, err := c.begin(batch)
	if err != nil {
		return batch, nil, err
	}
	q, done := c.querier(tx)
	defer done()
	run := c.runBare
	if savepoints {
		run = c.runJob
	}
	start := time.Now()
	for _, j := range batch {
		if err := run(q, j); err != nil {
			return batch, j, rollback(tx, err)
		}
	}
	var lingerUntil time.Time
	for more && len(batch) < maxBatchJobs && time.Since(start) < maxBatchTime {
		j := c.nextJob(len(batch), &lingerUntil)
		if j == nil {
			break
		}
		if j.alone {
			c.held = j // after this batch, on its own
			break
		}
		batch = append(batch, j)
		if err := run(q, j); err != nil {
			return batch, j, rollback(tx, err)
		}
	}
	c.lastBatch = len(batch)
	return batch, nil, tx.Commit()
}

// maxAloneJobs bounds how many jobs to run alone share one transaction.
const maxAloneJobs = 8

// runAloneJobs runs first and the other jobs to run alone already queued
// behind it (up to maxAloneJobs) one after the other in one transaction,
// without savepoints, and commits it once, so that concurrent batches share
// the wait for the disk as the group's jobs do. Should any of them fail,
// the transaction is rolled back whole, and each job runs again in a
// transaction of its own (runAloneJob): what commits for a job is always
// its whole work or none of it, as if it had run alone. A job that is not
// to run alone, or that must run once (runOnce), ends the gathering and
// runs next; such a job runs in a transaction of its own, or in none
// (runOutside).
func (c *committer) runAloneJobs(first *txJob) {
	if first.outside {
		c.runOutsideJob(first)
		return
	}
	if first.once {
		c.runAloneJob(first)
		return
	}
	jobs := []*txJob{first}
gather:
	for len(jobs) < maxAloneJobs {
		select {
		case j := <-c.jobs:
			if !j.alone || j.once {
				c.held = j
				break gather
			}
			jobs = append(jobs, j)
		default:
			break gather
		}
	}
	if len(jobs) == 1 {
		c.runAloneJob(first)
		return
	}
	live := jobs[:0]
	for _, j := range jobs {
		if err := j.gone(); err != nil {
			j.done <- err
		} else {
			live = append(live, j)
		}
	}
	if len(live) == 0 {
		return
	}
	tx, err := c.begin(live)
	if err != nil {
		answer(live, err)
		return
	}
	q, done := c.querier(tx)
	defer done()
	for _, j := range live {
		if err := callJob(q, j); err != nil {
			_ = tx.Rollback()
			for _, j := range live {
				j.panicked = nil
				c.runAloneJob(j)
			}
			return
		}
	}
	answer(live, tx.Commit())
}

// runOutsideJob runs j on the writer's pool, in no transaction.
func (c *committer) runOutsideJob(j *txJob) {
	if err := j.gone(); err != nil {
		j.done <- err
		return
	}
	j.done <- callJob(c.s.writer(), j)
}

// runAloneJob runs j in a transaction of its own, without a savepoint,
// commits it and answers j.
func (c *committer) runAloneJob(j *txJob) {
	if err := j.gone(); err != nil {
		j.done <- err
		return
	}
	tx, err := c.begin([]*txJob{j})
	if err != nil {
		j.done <- err
		return
	}
	q, done := c.querier(tx)
	defer done()
	if err := callJob(q, j); err != nil {
		_ = tx.Rollback()
		j.done <- err
		return
	}
	j.done <- tx.Commit()
}

// begin begins the writer's transaction for jobs. While another
// connection or process holds the write lock (a pds import between its
// chunks, a backup), it tries again every beginPoll, for up to beginWait
// or until every job's caller has stopped waiting. SQLite's own busy wait
// sleeps up to 100 ms between tries, and would mostly miss the moments an
// import leaves free between its chunks: a write waited for the whole
// import. (The writer's connection therefore has no busy timeout.)
func (c *committer) begin(jobs []*txJob) (*sql.Tx, error) {
	giveUp := time.Now().Add(beginWait)
	for {
		// The transaction outlives any one caller's context (see runTx).
		tx, err := c.s.w.BeginTx(context.Background(), nil)
		if err == nil || c.s.dialect.Conflict == nil || c.s.dialect.Conflict(err) != ConflictBusy ||
			time.Now().After(giveUp) || !slices.ContainsFunc(jobs, func(j *txJob) bool { return j.ctx.Err() == nil }) {
			return tx, err
		}
		time.Sleep(beginPoll)
	}
}

// beginPoll and beginWait pace begin.
const (
	beginPoll = 200 * time.Microsecond
	beginWait = 10 * time.Second
)

// rollback ends a transaction in a state no savepoint accounts for (SQLite
// rolls back the whole transaction on some errors, an interrupted write
// among them, and later statements would run outside it): nothing of it
// is kept.
func rollback(tx *sql.Tx, err error) error {
	_ = tx.Rollback()
	return fmt.Errorf("group commit: %w", err)
}

// runBare runs j's function with no savepoint around it, for an optimistic
// batch: its error, or its panic, is returned, and the caller must roll the
// whole transaction back, since what j wrote before failing cannot be
// undone alone. A job whose context has ended does not run, writes nothing
// and does not fail the batch.
func (c *committer) runBare(q querier, j *txJob) error {
	if j.err = j.gone(); j.err != nil {
		return nil
	}
	j.err = callJob(q, j)
	return j.err
}

// runJob runs j's function inside a savepoint, keeping its work if it
// succeeds and undoing only its work if it fails; j.err is its answer
// should the batch commit. An error returned means the transaction itself
// is broken: the savepoint could not be released or rolled back to.
func (c *committer) runJob(q querier, j *txJob) error {
	ctx := context.Background()
	if j.err = j.gone(); j.err != nil {
		return nil
	}
	if _, err := q.exec(ctx, `SAVEPOINT g`); err != nil {
		return err
	}
	j.err = callJob(q, j)
	if j.err == nil {
		_, err := q.exec(ctx, `RELEASE g`)
		return err
	}
	if _, err := q.exec(ctx, `ROLLBACK TO g`); err != nil {
		return err
	}
	_, err := q.exec(ctx, `RELEASE g`)
	return err
}

func callJob(q querier, j *txJob) (err error) {
	defer func() {
		if v := recover(); v != nil {
			j.panicked = v
			err = fmt.Errorf("panic: %v", v)
		}
	}()
	return j.fn(q)
}

// querier is the querier of tx, a transaction of the committer's, shared
// by the callers of its batch.
func (c *committer) querier(tx *sql.Tx) (querier, func()) {
	q, done := c.s.txQuerier(context.Background(), c.s.w, tx)
	q.shared = true
	return q, done
}

// GroupCommit runs the write transactions of concurrent callers together,
// each in a savepoint, under one commit (see committer): for an engine
// whose writes take turns on one connection anyway (SQLite), so that they
// share the wait for the disk.
var GroupCommit Writes = groupCommit{}

type groupCommit struct{}

func (groupCommit) start(s *Store) writeRunner { return newCommitter(s) }

// single has a single write join the committer's next batch rather than
// take the writer connection, and a commit, of its own.
func (c *committer) single(ctx context.Context, _ querier, fn func(q querier) error) error {
	return c.run(ctx, fn)
}

func (c *committer) between(ctx context.Context, fn func(context.Context, *sql.DB) error) error {
	return c.runOutside(ctx, func(querier) error { return fn(ctx, c.s.w) })
}

// opened: a transaction reads one snapshot, and a write transaction holds
// the database's one write lock, so an account found without a suppression
// secret stays without one until the transaction ends.
func (c *committer) opened(q *querier) { q.noSecret = map[string]bool{} }
