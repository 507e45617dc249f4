package postgres

import (
	"context"
	"database/sql"
	"sync"

	"github.com/pds-dev/pds/internal/store/sqlstore"
)

// keyPoll is PostgreSQL's sqlstore.KeySync when no session of its own can
// LISTEN (--database names a transaction-mode pooler and no
// --database-direct is given). Every change to a key bumps the one row of
// key_changes in the same transaction (migration 00150), and a Sync reads
// it through the pool: a statement that starts after a change committed
// sees it, so when the count moved the cache is emptied before the key is
// looked up. Concurrent requests share reads (sqlstore.SharedRead): one
// statement per batch of requests, as keyWatch's round trips are, and
// revocation takes effect on the very next request as there.
//
// The count alone cannot tell that the server behind the URL changed: after
// a failover, the promoted standby may lack increments the old primary
// made (an asynchronous standby, or one that was behind), and its count
// can climb back to the one seen with other changes, keys revoked there
// among them. So each read also reads which server, in which life, answers
// (lifeColumns), and a change of that empties the cache as a moved count
// does.
type keyPoll struct {
	st    *sqlstore.Store
	db    *sql.DB
	reads *sqlstore.SharedRead
	// floors, with replicas, hears the primary's insert position each
	// read also reads: the floor of the request's reads (replicas.go).
	floors *replicaSet

	mu   sync.Mutex
	seen pollRead
	read bool // seen holds a read
}

// pollRead is what one read of the counter saw.
type pollRead struct {
	n        int64
	timeline int
	started  string
}

func newKeyPoll(db *sql.DB, st *sqlstore.Store, floors *replicaSet) *keyPoll {
	p := &keyPoll{st: st, db: db, floors: floors}
	p.reads = sqlstore.NewSharedRead(p.readCounter, syncTimeout)
	return p
}

// Sync returns once a read of the counter that started after it was
// called has emptied the cache if the counter moved.
// With replicas, that read's position of the primary is the request's floor.
func (p *keyPoll) Sync(ctx context.Context) error {
	if err := p.reads.Wait(ctx); err != nil {
		return err
	}
	if p.floors != nil {
		p.floors.floorFromKeyCheck(ctx)
	}
	return nil
}

// readCounter reads the counter, and the server's life, and empties the
// key cache when either moved. Reads never overlap, so a later read never
// sees an older count of the same server.
func (p *keyPoll) readCounter(ctx context.Context) error {
	var r pollRead
	if p.floors != nil {
		var lsn string
		if err := p.db.QueryRowContext(ctx, `SELECT n, `+lifeColumns+`, pg_current_wal_insert_lsn()::text FROM key_changes WHERE id = 1`).
			Scan(&r.n, &r.timeline, &r.started, &lsn); err != nil {
			return err
		}
		if err := p.floors.noteFloor(lsn); err != nil {
			return err
		}
	} else if err := p.db.QueryRowContext(ctx, `SELECT n, `+lifeColumns+` FROM key_changes WHERE id = 1`).
		Scan(&r.n, &r.timeline, &r.started); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.read || r != p.seen {
		// Keys cached before the first read may predate any change.
		p.seen, p.read = r, true
		p.st.ForgetKeys()
	}
	return nil
}

// Close does nothing: the reads use the store's pool.
func (p *keyPoll) Close() error { return nil }
