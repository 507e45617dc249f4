package postgres

import (
	"context"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pds-dev/pds/internal/store/sqlstore"
)

// keyChannel is the channel every change to a key is notified on (trigger
// api_keys_changed, migration 00021), with its schema and hash as payload.
const keyChannel = "pds_api_keys"

// syncTimeout bounds one sync round trip; past it the listening connection
// counts as lost.
const syncTimeout = time.Second

var errNotListening = errors.New("postgres: the key cache's listening connection is down")

// keyWatch is PostgreSQL's sqlstore.KeySync: a connection of its own that
// LISTENs on keyChannel and drops each notified key from the cache.
//
// A notification reaches a listener shortly after the change commits, not
// before the change's transaction returns to whoever made it, so hearing
// notifications is not enough for "the very next request": Sync also sends
// an empty query on the listening connection and waits for its answer. The
// server sends a listener every notification committed before the query
// arrived ahead of the query's answer (it delivers pending notifications
// before ReadyForQuery), so when Sync returns, every change committed before
// the request came in has been applied to the cache. Concurrent requests
// share one round trip: a request waits for the first round that starts
// after it arrived, so under load the price is one round trip per batch of
// requests rather than a key read per request.
//
// When the connection is lost (or a round takes longer than syncTimeout),
// Sync fails and the cache is passed over until a new connection listens;
// the cache is emptied then, since notifications may have been missed. The
// connection is made on the first Sync, so a store that never authenticates
// a request holds none. It must be a session of its own on the server: a
// pooler in transaction mode (PgBouncer) would neither deliver the
// notifications nor answer the sync on the listening session.
type keyWatch struct {
	url string
	st  *sqlstore.Store
	// floors, with replicas, hears the primary's insert position each
	// sync round reads instead of its empty query: the floor of the
	// request's reads (replicas.go).
	floors *replicaSet

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	started bool
	up      bool
	round   *syncRound         // the round that requests arriving now join
	wake    context.CancelFunc // ends the idle wait for a notification
	pid     uint32             // the listening backend, for tests
	schema  string             // only the run goroutine uses it
}

// syncRound is one round trip on the listening connection, shared by every
// request that joined it before it was sent.
type syncRound struct {
	done chan struct{}
	err  error
}

func newKeyWatch(url string, st *sqlstore.Store, floors *replicaSet) *keyWatch {
	ctx, cancel := context.WithCancel(context.Background())
	return &keyWatch{url: url, st: st, floors: floors, ctx: ctx, cancel: cancel, done: make(chan struct{})}
}

// Sync returns once the cache has applied every key change committed
// before it was called, or an error when it cannot promise that.
func (w *keyWatch) Sync(ctx context.Context) error {
	w.mu.Lock()
	if !w.started {
		w.started = true
		go w.run()
	}
	if !w.up {
		w.mu.Unlock()
		return errNotListening
	}
	r := w.round
	if r == nil {
		r = &syncRound{done: make(chan struct{})}
		w.round = r
	}
	if w.wake != nil {
		w.wake()
		w.wake = nil
	}
	w.mu.Unlock()
	select {
	case <-r.done:
		if r.err == nil && w.floors != nil {
			w.floors.floorFromKeyCheck(ctx)
		}
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops listening; closing again does nothing.
func (w *keyWatch) Close() error {
	w.cancel()
	w.mu.Lock()
	if !w.started {
		w.started = true // no Sync starts it from now on
		close(w.done)
	}
	w.mu.Unlock()
	<-w.done
	return nil
}

// run keeps a listening connection, reconnecting with a growing pause.
func (w *keyWatch) run() {
	defer close(w.done)
	pause := 50 * time.Millisecond
	for {
		listened, _ := w.listen()
		if w.ctx.Err() != nil {
			return
		}
		if listened {
			pause = 50 * time.Millisecond
		}
		select {
		case <-w.ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, 5*time.Second)
	}
}

// listen connects, listens and serves sync rounds until the connection
// fails; listened reports whether it got as far as listening.
func (w *keyWatch) listen() (listened bool, err error) {
	cfg, err := pgconn.ParseConfig(w.url)
	if err != nil {
		return false, err
	}
	cfg.OnNotification = w.notified
	cfg.RuntimeParams["application_name"] = "pds key cache"
	// Only a primary delivers the notifications of the changes made on it.
	watchServers(cfg, true)
	preferLast(cfg)
	ctx, cancel := context.WithTimeout(w.ctx, 10*time.Second)
	defer cancel()
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return false, err
	}
	defer conn.Close(context.Background())
	res, err := conn.Exec(ctx, `SELECT current_schema()`).ReadAll()
	if err != nil {
		return false, err
	}
	if len(res) != 1 || len(res[0].Rows) != 1 {
		return false, errors.New("postgres: current_schema() gave no row")
	}
	w.schema = string(res[0].Rows[0][0])
	if _, err := conn.Exec(ctx, `LISTEN `+keyChannel).ReadAll(); err != nil {
		return false, err
	}
	// Keys may have changed while nobody listened.
	w.st.ForgetKeys()
	w.mu.Lock()
	w.pid = conn.PID()
	w.mu.Unlock()
	w.setUp(true)
	defer w.setUp(false)
	return true, w.serve(conn)
}

// serve answers sync rounds on conn and, between them, waits for
// notifications (which notified applies, also during a round).
func (w *keyWatch) serve(conn *pgconn.PgConn) error {
	for {
		w.mu.Lock()
		r := w.round
		w.round = nil
		var wait context.Context
		var stopWait context.CancelFunc
		if r == nil {
			wait, stopWait = context.WithCancel(w.ctx)
			w.wake = stopWait
		}
		w.mu.Unlock()

		if r != nil {
			ctx, cancel := context.WithTimeout(w.ctx, syncTimeout)
			err := w.syncRound(ctx, conn)
			cancel()
			r.err = err
			close(r.done)
			if err != nil {
				return err
			}
			continue
		}
		err := conn.WaitForNotification(wait)
		stopWait()
		w.mu.Lock()
		w.wake = nil
		w.mu.Unlock()
		if w.ctx.Err() != nil {
			return w.ctx.Err()
		}
		if err != nil && wait.Err() == nil {
			return err // the connection failed, not a request waking the wait
		}
	}
}

// syncRound is one round trip on the listening connection: an empty query,
// or with replicas the primary's insert position.
func (w *keyWatch) syncRound(ctx context.Context, conn *pgconn.PgConn) error {
	if w.floors == nil {
		return conn.Exec(ctx, `-- sync`).Close()
	}
	res, err := conn.Exec(ctx, `SELECT pg_current_wal_insert_lsn()::text`).ReadAll()
	if err != nil {
		return err
	}
	if len(res) != 1 || len(res[0].Rows) != 1 {
		return errors.New("postgres: the sync round read no position")
	}
	return w.floors.noteFloor(string(res[0].Rows[0][0]))
}

// setUp records whether the connection listens; going down fails the round
// requests are waiting on, so that they read their keys from the database.
func (w *keyWatch) setUp(up bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.up = up
	if !up && w.round != nil {
		w.round.err = errNotListening
		close(w.round.done)
		w.round = nil
	}
}

// notified drops the key a notification names; a notification it cannot
// read drops every key.
func (w *keyWatch) notified(_ *pgconn.PgConn, n *pgconn.Notification) {
	if n.Channel != keyChannel {
		return
	}
	// The hash is hex; a schema's name may hold spaces.
	i := strings.LastIndexByte(n.Payload, ' ')
	if i < 0 {
		w.st.ForgetKeys()
		return
	}
	schema, hexHash := n.Payload[:i], n.Payload[i+1:]
	if schema != w.schema {
		return // another deployment (or test) in the same database
	}
	hash, err := hex.DecodeString(hexHash)
	if err != nil {
		w.st.ForgetKeys()
		return
	}
	w.st.ForgetKey(hash)
}
