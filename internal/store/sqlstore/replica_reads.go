package sqlstore

import (
	"context"
	"database/sql"

	"github.com/pds-dev/pds/internal/store"
)

// ReadRouter sends the reads that are safe on a replica to one that has
// caught up with the request, as the engine knows its replicas (PostgreSQL's
// --database-replica; Store.RouteReads). Which reads are safe is decided
// here, in the methods that call safeRead, safeReadTx or pickReplica, and
// nowhere else: everything else reads through s.reader() on the primary.
type ReadRouter interface {
	// Floor is the position every read of ctx's request must see
	// (store.ReadFloor), read when ctx's floor is not known yet; ok is
	// false when ctx's reads must go to the primary.
	Floor(ctx context.Context) (floor uint64, ok bool)
	// Pick returns the pool of a replica that has replayed floor, waiting
	// a bounded few milliseconds for one; nil when none has: the read goes
	// to the primary.
	Pick(ctx context.Context, floor uint64) *sql.DB
	// Failed hears that a read on replica failed with err and says whether
	// to read again on the primary: not for a refusal or a caller that went
	// away, yes for a replica down or in conflict with recovery, which is
	// retried later.
	Failed(ctx context.Context, replica *sql.DB, err error) bool
	Stats() store.ReplicaStats
	Close() error
}

// RouteReads has the store send its safe reads through r; Close closes r.
func (s *Store) RouteReads(r ReadRouter) { s.router = r }

// ReplicaStats says where the safe reads went; ok is false without replicas.
func (s *Store) ReplicaStats() (_ store.ReplicaStats, ok bool) {
	if s.router == nil {
		return store.ReplicaStats{}, false
	}
	return s.router.Stats(), true
}

// readAt is where a read may go: to a replica that has replayed floor,
// when replica is set; to the primary otherwise.
type readAt struct {
	floor   uint64
	replica bool
}

// readsAt is where ctx's safe reads may go: to the primary without
// replicas, or for a context not marked for them.
func (s *Store) readsAt(ctx context.Context) readAt {
	if s.router == nil {
		return readAt{}
	}
	floor, ok := s.router.Floor(ctx)
	return readAt{floor: floor, replica: ok}
}

// pickReplica is the pool of a replica that has caught up with at, or nil.
func (s *Store) pickReplica(ctx context.Context, at readAt) *sql.DB {
	if !at.replica {
		return nil
	}
	return s.router.Pick(ctx, at.floor)
}

// safeRead runs fn, a read that is safe on a replica, on one that has
// caught up with ctx's request, or on the primary; when the replica fails
// it, again on the primary. fn only reads, and sets its results afresh.
func (s *Store) safeRead(ctx context.Context, fn func(q querier) error) error {
	return s.safeReadAt(ctx, s.readsAt(ctx), func(db *sql.DB) error { return fn(querier{s: s, db: db}) })
}

// safeReadTx is safeRead for a read that runs in one snapshot (inReadTx).
func (s *Store) safeReadTx(ctx context.Context, fn func(q querier) error) error {
	return s.safeReadAt(ctx, s.readsAt(ctx), func(db *sql.DB) error { return s.inReadTxOn(ctx, db, fn) })
}

// safeReadAt runs read on a replica that has caught up with at, else, or
// when it fails there, on the primary's reader.
func (s *Store) safeReadAt(ctx context.Context, at readAt, read func(db *sql.DB) error) error {
	if db := s.pickReplica(ctx, at); db != nil {
		err := read(db)
		if err == nil || !s.router.Failed(ctx, db, err) {
			return err
		}
	}
	return read(s.r)
}

// safeValue is safeRead for a read that returns a value.
func safeValue[T any](ctx context.Context, s *Store, fn func(q querier) (T, error)) (T, error) {
	var out T
	err := s.safeRead(ctx, func(q querier) (err error) {
		out, err = fn(q)
		return err
	})
	return out, err
}

// safePage is safeRead for a read that returns a page and its total.
func safePage[T any](ctx context.Context, s *Store, fn func(q querier) ([]T, int, error)) ([]T, int, error) {
	var (
		out   []T
		total int
	)
	err := s.safeRead(ctx, func(q querier) (err error) {
		out, total, err = fn(q)
		return err
	})
	return out, total, err
}
