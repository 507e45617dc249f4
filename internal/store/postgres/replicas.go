package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/store/sqlstore"
)

// The reads a replica may serve (sqlstore decides which: safeRead) go to a
// streaming standby of the primary that has replayed everything
// acknowledged before the request arrived; replicaSet is sqlstore's
// ReadRouter over the --database-replica URLs.
//
// The floor a request's reads must see is the primary's WAL insert
// position, read after the request arrived: with the key check's read when
// there is one (keyPoll, keyWatch), else by a read of its own shared by the
// requests that arrived meanwhile (floors). The insert position, not the
// flush position: with synchronous_commit off a commit is acknowledged
// before its record is flushed, so only the insert position is sure to
// cover it; with it on (local, remote_write, on) the two differ only by
// records not yet acknowledged, and a floor a little high costs at most a
// wait.
//
// A replica serves a read once its replay position has reached the floor.
// That position is read before the read, not inside the read's own
// statement: a statement takes its snapshot as it starts and would evaluate
// pg_last_wal_replay_lsn() after, so a comparison there could pass with a
// snapshot that misses the write. Replay only moves forward within one
// life of a server, so a position read earlier that covers the floor
// covers it for every later statement; a replica's new life (a restart,
// which may open for reads at an earlier point after a crash) is caught as
// its connections are made (admit): its known position is forgotten and
// that first connection refused, so that no read decided on the old life
// runs on the new one. Behind a pooler the server's connections are the
// pooler's, so a restart there is only seen by the next probe.
//
// A read that finds no replica caught up waits up to replicaWait for one,
// probing, then goes to the primary. A replica that fails a read (down, a
// recovery conflict, 40001) hands the read to the primary; a down one is
// passed over until the monitor, which probes every replica each
// replicaCheckEvery, finds it serving again.

// Tuning of the router; variables so that tests may shorten them.
var (
	// replicaWait bounds how long a read waits for a replica to catch
	// up before going to the primary.
	replicaWait = 5 * time.Millisecond
	// replicaCheckEvery is how often the monitor measures every replica.
	replicaCheckEvery = time.Second
	// replicaMaxLagBytes and replicaMaxLagSeconds mark a replica lagging:
	// no read waits for it (it still serves those it has caught up with).
	replicaMaxLagBytes   uint64 = 16 << 20
	replicaMaxLagSeconds        = 10.0
	// replicaProbeTimeout bounds one probe of a replica.
	replicaProbeTimeout = time.Second
	// replicaNoWait is how long no read waits for a replica that did not
	// catch up within replicaWait replicaMisses times in a row (one
	// paused, or delayed): reads go straight to the primary meanwhile,
	// unless it has caught up. One miss alone is a busy moment.
	replicaNoWait       = 100 * time.Millisecond
	replicaMisses int32 = 3
)

// replicaSet routes safe reads to the replicas, and measures them.
type replicaSet struct {
	primary  *sql.DB
	replicas []*replica
	next     atomic.Uint32 // round robin among the replicas
	// system is the primary's system identifier, which its standbys
	// share ("" when it would not tell).
	system string
	// everyRead routes the reads of contexts not marked too, each
	// waiting longer and never backing off, so that as many as can are
	// served by replicas (the conformance suite's run, tests only).
	everyRead bool

	// latest is the highest insert position read on the primary; floors
	// shares the reads made for requests the key check gave none.
	latest atomic.Uint64
	floors *sqlstore.SharedRead

	reads readCounts
	stop  context.CancelFunc
	done  chan struct{}
}

// replica is one --database-replica.
type replica struct {
	set  *replicaSet
	name string // host:port, for the metrics
	db   *sql.DB

	// replayed is the highest replay position read in life; 0 when not
	// known (at start, and after a new life).
	replayed atomic.Uint64
	up       atomic.Bool
	lagging  atomic.Bool
	probes   *sqlstore.SharedRead

	served atomic.Uint64 // reads it was picked for
	// noWaitUntil (Unix nanoseconds) is when reads may wait for it again;
	// misses counts the waits in a row it did not catch up within.
	noWaitUntil atomic.Int64
	misses      atomic.Int32

	mu         sync.Mutex
	life       string // the postmaster's start time seen last
	lagBytes   uint64
	lagSeconds float64
}

// openReplicas makes the router over urls, reading the primary's identity
// through primary. A replica down now costs nothing: its pool connects when
// it serves again.
func openReplicas(ctx context.Context, primary *sql.DB, urls []string, everyRead bool) (*replicaSet, error) {
	rs := &replicaSet{primary: primary, everyRead: everyRead, done: make(chan struct{})}
	rs.floors = sqlstore.NewSharedRead(rs.readFloor, syncTimeout)
	// Without pg_control_system() (a role denied it) replicas are taken
	// as their URLs name them.
	_ = primary.QueryRowContext(ctx, `SELECT system_identifier::text FROM pg_control_system()`).Scan(&rs.system)
	for _, url := range urls {
		r, err := rs.openReplica(url)
		if err != nil {
			rs.closePools()
			return nil, err
		}
		rs.replicas = append(rs.replicas, r)
	}
	mctx, stop := context.WithCancel(context.Background())
	rs.stop = stop
	go rs.monitor(mctx)
	return rs, nil
}

func (rs *replicaSet) openReplica(url string) (*replica, error) {
	url, err := withConnectTimeout(url)
	if err != nil {
		return nil, err
	}
	cfg, err := replicaConnConfig(url)
	if err != nil {
		return nil, err
	}
	r := &replica{set: rs, name: hostList(&cfg.Config)}
	r.up.Store(true) // until a read or a probe says otherwise
	cfg.AfterConnect = r.admit
	// No commit to confirm (durable.go): replicas only read.
	r.db = sql.OpenDB(stdlib.GetConnector(*cfg))
	r.db.SetMaxOpenConns(PoolSize())
	r.db.SetMaxIdleConns(PoolSize())
	r.probes = sqlstore.NewSharedRead(r.probeAlone, replicaProbeTimeout)
	return r, nil
}

// Floor is the position ctx's reads must see: the one the key check read,
// or one read now; ok is false for a context not marked for replicas, or
// when the primary's position cannot be read (the read then meets the
// primary's fault itself).
func (rs *replicaSet) Floor(ctx context.Context) (uint64, bool) {
	f := store.ReadFloorOf(ctx)
	if f == nil && rs.everyRead {
		f = &store.ReadFloor{}
	}
	if f == nil {
		return 0, false
	}
	if v := f.Get(); v != 0 {
		return v, true
	}
	if err := rs.floors.Wait(ctx); err != nil {
		rs.reads.add(targetPrimary, "no_floor")
		return 0, false
	}
	f.Raise(rs.latest.Load())
	return f.Get(), true
}

// readFloor reads the primary's insert position.
func (rs *replicaSet) readFloor(ctx context.Context) error {
	var text string
	if err := rs.primary.QueryRowContext(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&text); err != nil {
		return err
	}
	return rs.noteFloor(text)
}

// noteFloor records a position read on the primary (as text, X/Y).
func (rs *replicaSet) noteFloor(text string) error {
	lsn, err := parseLSN(text)
	if err != nil {
		return err
	}
	raise(&rs.latest, lsn)
	return nil
}

// floorFromKeyCheck gives ctx's request the floor the key check just read:
// every read of the primary's position this process made since is at least
// as high as the one that started after the request arrived.
func (rs *replicaSet) floorFromKeyCheck(ctx context.Context) {
	if f := store.ReadFloorOf(ctx); f != nil {
		f.Raise(rs.latest.Load())
	}
}

// Pick returns a replica that has replayed floor, waiting up to
// replicaWait for one; nil for the primary.
func (rs *replicaSet) Pick(ctx context.Context, floor uint64) *sql.DB {
	n := uint32(len(rs.replicas))
	start := rs.next.Add(1)
	now := time.Now().UnixNano()
	var waitFor []*replica
	for i := range n {
		r := rs.replicas[(start+i)%n]
		if !r.up.Load() {
			continue
		}
		if r.replayed.Load() >= floor {
			rs.reads.add(targetReplica, "caught_up")
			r.served.Add(1)
			return r.db
		}
		if !r.lagging.Load() && (now >= r.noWaitUntil.Load() || rs.everyRead) {
			waitFor = append(waitFor, r)
		}
	}
	if len(waitFor) == 0 {
		rs.reads.add(targetPrimary, rs.noneUp())
		return nil
	}
	wait := replicaWait
	if rs.everyRead {
		wait = 20 * replicaWait
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for wctx.Err() == nil {
		for _, r := range waitFor {
			// A probe that started after the floor was read.
			if r.probes.Wait(wctx) == nil && r.up.Load() && r.replayed.Load() >= floor {
				r.misses.Store(0)
				rs.reads.add(targetReplica, "waited")
				r.served.Add(1)
				return r.db
			}
		}
		select {
		case <-wctx.Done():
		case <-time.After(time.Millisecond / 2):
		}
	}
	until := time.Now().Add(replicaNoWait).UnixNano()
	for _, r := range waitFor {
		if r.replayed.Load() < floor && r.misses.Add(1) >= replicaMisses {
			r.noWaitUntil.Store(until)
			r.misses.Store(0)
		}
	}
	rs.reads.add(targetPrimary, "behind")
	return nil
}

// noneUp says why no replica could serve a read without a wait: all down,
// or the others behind.
func (rs *replicaSet) noneUp() string {
	for _, r := range rs.replicas {
		if r.up.Load() {
			return "behind"
		}
	}
	return "down"
}

// Failed decides whether a read that replica failed runs again on the
// primary, and passes over a replica that is down until it serves again.
func (rs *replicaSet) Failed(ctx context.Context, db *sql.DB, err error) bool {
	if ctx.Err() != nil || domain.IsRefusal(err) || errors.Is(err, sql.ErrNoRows) {
		return false
	}
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01"):
		// Canceled for a conflict with recovery: the replica serves on.
		rs.reads.add(targetFallback, "recovery_conflict")
	case unavailable(err) != "" || errors.Is(err, errReplicaNewLife) || errors.Is(err, errNotStandby):
		rs.reads.add(targetFallback, "down")
		for _, r := range rs.replicas {
			if r.db == db {
				r.down()
			}
		}
	default:
		rs.reads.add(targetFallback, "error")
	}
	return true
}

// Stats says where the reads went and how far each replica is behind.
func (rs *replicaSet) Stats() store.ReplicaStats {
	st := store.ReplicaStats{Reads: rs.reads.all()}
	for _, r := range rs.replicas {
		r.mu.Lock()
		st.Replicas = append(st.Replicas, store.ReplicaState{Name: r.name, Up: r.up.Load(), Reads: r.served.Load(),
			LagBytes: r.lagBytes, LagSeconds: r.lagSeconds})
		r.mu.Unlock()
	}
	return st
}

// Close stops the monitor and closes the replicas' pools.
func (rs *replicaSet) Close() error {
	rs.stop()
	<-rs.done
	return rs.closePools()
}

func (rs *replicaSet) closePools() error {
	var err error
	for _, r := range rs.replicas {
		err = errors.Join(err, r.db.Close())
	}
	return err
}

// monitor measures every replica each replicaCheckEvery: whether it is up
// again, and its lag.
func (rs *replicaSet) monitor(ctx context.Context) {
	defer close(rs.done)
	tick := time.NewTicker(replicaCheckEvery)
	defer tick.Stop()
	for {
		pctx, cancel := context.WithTimeout(ctx, replicaProbeTimeout)
		_ = rs.readFloor(pctx)
		for _, r := range rs.replicas {
			if r.probe(pctx) != nil {
				r.down() // a probe past its timeout too
			}
		}
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// probeQuery reads a standby's replay position, the age of its last
// replayed commit (0 when it has replayed all it received: an idle primary
// sends none), and its life.
const probeQuery = `SELECT pg_last_wal_replay_lsn()::text,
	CASE WHEN pg_last_wal_receive_lsn() IS NULL OR pg_last_wal_receive_lsn() <= pg_last_wal_replay_lsn() THEN 0
		ELSE COALESCE(EXTRACT(epoch FROM now() - pg_last_xact_replay_timestamp()), 0) END::float8,
	pg_postmaster_start_time()::text`

// probeAlone is probe under a deadline of its own: a read that waits a
// few milliseconds may run the shared probe itself, and its deadline would
// cancel the statement and cost the pool its connection (cancel.go).
func (r *replica) probeAlone(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), replicaProbeTimeout)
	defer cancel()
	return r.probe(pctx)
}

// probe reads the replica's replay position and lag; a success marks it
// up, a failure down, but for one that ran out of its caller's time (a read
// waiting a few milliseconds, which may run the shared probe itself).
func (r *replica) probe(ctx context.Context) error {
	var (
		replay  sql.NullString
		seconds float64
		started string
	)
	err := r.db.QueryRowContext(ctx, probeQuery).Scan(&replay, &seconds, &started)
	if errors.Is(err, errReplicaNewLife) {
		// The connection refused told a new life, now the one known: the
		// next one is admitted.
		err = r.db.QueryRowContext(ctx, probeQuery).Scan(&replay, &seconds, &started)
	}
	if err == nil && !replay.Valid {
		err = errNotStandby
	}
	var lsn uint64
	if err == nil {
		lsn, err = parseLSN(replay.String)
	}
	if err != nil {
		if ctx.Err() == nil {
			r.down()
		}
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if started != r.life {
		// A connection of another life answered (behind a pooler): what
		// was known of the old one no longer holds.
		r.life = started
		r.replayed.Store(0)
	}
	raise(&r.replayed, lsn)
	r.lagSeconds = seconds
	r.lagBytes = 0
	if primary := r.set.latest.Load(); primary > lsn {
		r.lagBytes = primary - lsn
	}
	r.lagging.Store(r.lagBytes > replicaMaxLagBytes || r.lagSeconds > replicaMaxLagSeconds)
	r.up.Store(true)
	return nil
}

// down passes the replica over until a probe finds it serving, and drops
// its idle connections: after a restart each would fail its next read.
func (r *replica) down() {
	if r.up.Swap(false) {
		r.db.SetMaxIdleConns(0)
		r.db.SetMaxIdleConns(PoolSize())
	}
}

var (
	errReplicaNewLife = errors.New("postgres: the replica restarted; its replay position is read again")
	errNotStandby     = errors.New("postgres: a --database-replica is not a standby of --database (not in recovery, or another system)")
)

// admit checks each connection to the replica as it is made: a standby of
// the primary's system, in the life whose replay position is known. A new
// life forgets that position and refuses this one connection (see above).
func (r *replica) admit(ctx context.Context, c *pgconn.PgConn) error {
	id, ok, err := readIdentity(ctx, c)
	if err != nil || !ok {
		return err
	}
	if id.timeline != 0 || (r.set.system != "" && id.system != r.set.system) {
		return errNotStandby
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.life != id.started {
		known := r.life != ""
		r.life = id.started
		r.replayed.Store(0)
		if known {
			return errReplicaNewLife
		}
	}
	return nil
}

// replicaConnConfig is the configuration of a replica's connections: what
// every connection needs (pooledConnConfig), without what only a primary
// needs (the check of commits' durability, the timelines of failover).
func replicaConnConfig(url string) (*pgx.ConnConfig, error) {
	cfg, err := pooledConnConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["application_name"] = "pds replica reads"
	return cfg, nil
}

// parseLSN reads a WAL position as PostgreSQL prints it: two hexadecimal
// halves, X/Y.
func parseLSN(text string) (uint64, error) {
	hi, lo, ok := strings.Cut(text, "/")
	h, herr := strconv.ParseUint(hi, 16, 32)
	l, lerr := strconv.ParseUint(lo, 16, 32)
	if !ok || herr != nil || lerr != nil {
		return 0, fmt.Errorf("postgres: a WAL position %q", text)
	}
	return h<<32 | l, nil
}

// raise sets v to n when n is higher.
func raise(v *atomic.Uint64, n uint64) {
	for {
		old := v.Load()
		if n <= old || v.CompareAndSwap(old, n) {
			return
		}
	}
}

// Where a routed read went, for the metrics.
const (
	targetReplica  = "replica"
	targetPrimary  = "primary"
	targetFallback = "fallback"
)

// readCounts counts routed reads by target and reason.
type readCounts struct{ m sync.Map } // [2]string -> *atomic.Uint64

func (c *readCounts) add(target, reason string) {
	k := [2]string{target, reason}
	v, ok := c.m.Load(k)
	if !ok {
		v, _ = c.m.LoadOrStore(k, new(atomic.Uint64))
	}
	v.(*atomic.Uint64).Add(1)
}

func (c *readCounts) all() []store.ReadCount {
	var out []store.ReadCount
	c.m.Range(func(k, v any) bool {
		key := k.([2]string)
		out = append(out, store.ReadCount{Target: key[0], Reason: key[1], N: v.(*atomic.Uint64).Load()})
		return true
	})
	return out
}
