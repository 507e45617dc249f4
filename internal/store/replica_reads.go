package store

import (
	"context"
	"sync/atomic"
)

// A request that only reads may be served by a replica of the database
// (PostgreSQL's --database-replica), but only one that has replayed
// everything acknowledged before the request arrived: a client that wrote
// through one instance and reads through another sees its write. The API
// and the console mark the context of such a request with a ReadFloor as it
// arrives (MayReadReplica); the engine fills in the floor from the read the
// key check makes anyway, or from a read of its own, and routes the
// request's safe reads by it. A context without one (a write's, the webhook
// worker's, a command's) reads the primary: the engine never guesses that a
// read is safe.

// ReadFloor is what a request's reads must see: a position in the
// primary's log that covers every commit acknowledged before the request
// arrived, as the engine reads it (0: not read yet). It only rises.
type ReadFloor struct{ lsn atomic.Uint64 }

// Get is the floor, 0 when not read yet.
func (f *ReadFloor) Get() uint64 { return f.lsn.Load() }

// Raise sets the floor to lsn when that is higher: a floor read later is
// still one read after the request arrived.
func (f *ReadFloor) Raise(lsn uint64) {
	for {
		old := f.lsn.Load()
		if lsn <= old || f.lsn.CompareAndSwap(old, lsn) {
			return
		}
	}
}

type readFloorKey struct{}

// MayReadReplica marks ctx as a request's that arrived now and may have its
// safe reads served by a replica that has caught up with its arrival.
func MayReadReplica(ctx context.Context) context.Context {
	return context.WithValue(ctx, readFloorKey{}, &ReadFloor{})
}

// ReadFloorOf is ctx's ReadFloor; nil when its reads must go to the primary.
func ReadFloorOf(ctx context.Context) *ReadFloor {
	f, _ := ctx.Value(readFloorKey{}).(*ReadFloor)
	return f
}

// ReplicaStats says where an instance's safe reads went and how far its
// replicas are behind, for the metrics.
type ReplicaStats struct {
	// Reads counts reads by target: "replica", "primary" and "fallback"
	// (a replica failed the read and the primary served it), each by why.
	Reads []ReadCount
	// Replicas is each replica's state as last measured.
	Replicas []ReplicaState
}

// ReadCount is how many reads went to Target for Reason.
type ReadCount struct {
	Target, Reason string
	N              uint64
}

// ReplicaState is one replica's health and lag.
type ReplicaState struct {
	// Name is the replica's host and port, as its URL gives them.
	Name string
	Up   bool
	// Reads counts the reads it was picked for.
	Reads uint64
	// LagBytes is how far its replay is behind the primary's log;
	// LagSeconds how old its last replayed commit is, 0 when it has
	// replayed all it received.
	LagBytes   uint64
	LagSeconds float64
}
