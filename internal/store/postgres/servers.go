package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"
)

// Which server a URL reaches, across failovers. A URL may list several
// hosts (postgres://h1,h2/db?target_session_attrs=read-write, what failover
// managers print), and the server behind a host may change: a standby
// promoted, an old primary started again on its own. Every connection pds
// makes is checked as it is made (checkServer, pgx's ValidateConnect), after
// the URL's own target_session_attrs check:
//
//   - a read-write server on a timeline lower than one this process has
//     connected to on the same system (system identifier) went back in
//     time: an old primary, whose writes since the promotion elsewhere a
//     failover manager will discard. It is refused (errWentBack), and pgx
//     tries the next host;
//   - the host that passed last is tried first next time (preferLast), so
//     that a host that hangs costs one connect_timeout, not one per
//     connection;
//   - what tells one server's life from another's (lifeColumns: timeline
//     and start) is what the key cache compares to tell that the server
//     behind the URL changed (keyPoll).
//
// What a process learned lives in the process, for every pool and URL it
// opens: a system's timelines only grow, and the database a stale server
// holds is the stale copy, so no row in it could tell that server it went
// back in time; only another server (Open asks every host of a URL once,
// learnTimelines) or a process that saw the newer timeline can. Fencing an
// old primary off is the failover manager's job; this refuses one to every
// process that knows better.

// serverIdentity tells one PostgreSQL server, and one life of it, from
// another.
type serverIdentity struct {
	// system is pg_control_system()'s identifier: the same on a primary
	// and on every standby copied from it.
	system string
	// timeline is the timeline the server writes on, 0 on a standby.
	timeline int
	// started is the postmaster's start time: a restart shows as a change.
	started string
	// readOnly: a standby, or a server whose transactions are read-only.
	readOnly bool
}

// lifeColumns read, of the server a statement runs on, what changes when
// another server, or another life of it, answers: its timeline (which a
// promotion changes; 0 on a standby, where pg_walfile_name fails) and its
// postmaster's start time. Both functions are everyone's to call.
const lifeColumns = `CASE WHEN pg_is_in_recovery() THEN 0
		ELSE ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int END,
	pg_postmaster_start_time()::text`

// identityQuery reads a serverIdentity: the system identifier, then
// lifeColumns, then whether it takes no writes.
const identityQuery = `SELECT (SELECT system_identifier::text FROM pg_control_system()), ` + lifeColumns + `,
	pg_is_in_recovery() OR current_setting('transaction_read_only')::bool`

// readIdentity reads the identity of the server behind c; ok is false for
// a server that will not tell (a role that may not call
// pg_control_system(), granted to everyone by default), which is then
// taken as it is.
func readIdentity(ctx context.Context, c *pgconn.PgConn) (id serverIdentity, ok bool, err error) {
	res, err := c.Exec(ctx, identityQuery).ReadAll()
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return serverIdentity{}, false, nil
	}
	if err != nil {
		return serverIdentity{}, false, err
	}
	if len(res) != 1 || len(res[0].Rows) != 1 || len(res[0].Rows[0]) != 4 {
		return serverIdentity{}, false, errors.New("postgres: the server's identity read as no row")
	}
	row := res[0].Rows[0]
	tl, err := strconv.Atoi(string(row[1]))
	if err != nil {
		return serverIdentity{}, false, fmt.Errorf("postgres: the server's timeline %q: %w", row[1], err)
	}
	return serverIdentity{system: string(row[0]), timeline: tl, started: string(row[2]), readOnly: string(row[3]) == "t"}, true, nil
}

// errWentBack refuses a read-write server on a timeline older than one
// this process connected to on the same system.
type errWentBack struct {
	timeline, newest int
}

func (e *errWentBack) Error() string {
	return fmt.Sprintf("postgres: refused a read-write server on timeline %d: this process has written on timeline %d "+
		"of the same system, so it is an old primary that went on after a failover (a split brain)", e.timeline, e.newest)
}

// admitTimeline decides whether pds may use a server of identity id when
// the newest timeline seen on its system is newest (0: none yet). A server
// that takes no writes is never written to, whatever its timeline.
func admitTimeline(id serverIdentity, newest int) error {
	if !id.readOnly && id.timeline < newest {
		return &errWentBack{timeline: id.timeline, newest: newest}
	}
	return nil
}

// timelines is, per system identifier, the newest timeline of a read-write
// server this process has connected to.
var timelines = struct {
	sync.Mutex
	newest map[string]int
}{newest: map[string]int{}}

// admitServer is admitTimeline against what the process knows, and
// records id's timeline when it is newer.
func admitServer(id serverIdentity) error {
	timelines.Lock()
	defer timelines.Unlock()
	if err := admitTimeline(id, timelines.newest[id.system]); err != nil {
		return err
	}
	if !id.readOnly {
		timelines.newest[id.system] = max(timelines.newest[id.system], id.timeline)
	}
	return nil
}

// errStandby refuses a server in recovery where only a primary will do:
// the key cache's listener, which hears NOTIFY only on the primary.
var errStandby = errors.New("postgres: the server is a standby (or read-only), where a primary is needed")

// hostList names a URL's hosts in order, the key of what the process
// remembers of them.
func hostList(cfg *pgconn.Config) string {
	hosts := []string{net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))}
	for _, fb := range cfg.Fallbacks {
		hosts = append(hosts, net.JoinHostPort(fb.Host, strconv.Itoa(int(fb.Port))))
	}
	return strings.Join(hosts, ",")
}

// severalHosts reports whether cfg names more than one host:port.
func severalHosts(cfg *pgconn.Config) bool {
	for _, fb := range cfg.Fallbacks {
		if fb.Host != cfg.Host || fb.Port != cfg.Port {
			return true
		}
	}
	return false
}

// lastHosts is, per host list, the host:port that passed checkServer last;
// hostNames, the name each looked-up address was found for.
var lastHosts = struct {
	sync.Mutex
	byList    map[string]string
	hostNames map[string]string
}{byList: map[string]string{}, hostNames: map[string]string{}}

// watchServers makes cfg's connections pass checkServer, primaryOnly
// refusing standbys too, and remember their host; connect with
// preferLast(cfg) so that the host that passed last is tried first.
func watchServers(cfg *pgconn.Config, primaryOnly bool) {
	list := hostList(cfg)
	lookup := cfg.LookupFunc
	cfg.LookupFunc = func(ctx context.Context, host string) ([]string, error) {
		addrs, err := lookup(ctx, host)
		lastHosts.Lock()
		for _, a := range addrs {
			if ip, _, err := net.SplitHostPort(a); err == nil {
				a = ip
			}
			lastHosts.hostNames[a] = host
		}
		lastHosts.Unlock()
		return addrs, err
	}
	target := cfg.ValidateConnect
	cfg.ValidateConnect = func(ctx context.Context, c *pgconn.PgConn) error {
		if target != nil {
			if err := target(ctx, c); err != nil {
				return err
			}
		}
		id, known, err := readIdentity(ctx, c)
		if err != nil {
			return err
		}
		if known && primaryOnly && id.readOnly {
			return errStandby
		}
		if known {
			if err := admitServer(id); err != nil {
				return err
			}
		}
		if host, port, err := net.SplitHostPort(c.Conn().RemoteAddr().String()); err == nil {
			lastHosts.Lock()
			if name, ok := lastHosts.hostNames[host]; ok {
				host = name
			}
			lastHosts.byList[list] = net.JoinHostPort(host, port)
			lastHosts.Unlock()
		}
		return nil
	}
}

// preferLast puts the host of cfg that passed checkServer last, if any,
// ahead of the others, which keep their order.
func preferLast(cfg *pgconn.Config) {
	if len(cfg.Fallbacks) == 0 {
		return
	}
	lastHosts.Lock()
	last := lastHosts.byList[hostList(cfg)]
	lastHosts.Unlock()
	all := append([]*pgconn.FallbackConfig{{Host: cfg.Host, Port: cfg.Port, TLSConfig: cfg.TLSConfig}}, cfg.Fallbacks...)
	all = preferHost(all, last)
	cfg.Host, cfg.Port, cfg.TLSConfig = all[0].Host, all[0].Port, all[0].TLSConfig
	cfg.Fallbacks = all[1:]
}

// preferHost orders hosts with those at last (host:port; several with
// different TLS settings for sslmode=prefer) first, the others after them
// in their order.
func preferHost(hosts []*pgconn.FallbackConfig, last string) []*pgconn.FallbackConfig {
	first := make([]*pgconn.FallbackConfig, 0, len(hosts))
	var rest []*pgconn.FallbackConfig
	for _, h := range hosts {
		if net.JoinHostPort(h.Host, strconv.Itoa(int(h.Port))) == last {
			first = append(first, h)
		} else {
			rest = append(rest, h)
		}
	}
	return append(first, rest...)
}

// learnTimelines asks each host of cfg, at most its connect_timeout each
// and all at once, which server it is, so that a process that starts while
// an old primary runs again beside the promoted one refuses the old one
// from its first connection. A host that does not answer teaches nothing.
func learnTimelines(ctx context.Context, cfg *pgconn.Config) {
	// One host, if with and without TLS (sslmode=prefer), has nobody else
	// to ask.
	if !severalHosts(cfg) {
		return
	}
	var wg sync.WaitGroup
	for _, fb := range append([]*pgconn.FallbackConfig{{Host: cfg.Host, Port: cfg.Port, TLSConfig: cfg.TLSConfig}}, cfg.Fallbacks...) {
		one := cfg.Copy()
		one.Host, one.Port, one.TLSConfig, one.Fallbacks = fb.Host, fb.Port, fb.TLSConfig, nil
		one.ValidateConnect, one.AfterConnect = nil, nil
		wg.Go(func() {
			c, err := pgconn.ConnectConfig(ctx, one)
			if err != nil {
				return
			}
			defer c.Close(context.Background())
			if id, known, err := readIdentity(ctx, c); err == nil && known {
				_ = admitServer(id)
			}
		})
	}
	wg.Wait()
}
