// Package pgcluster runs a PostgreSQL primary and a standby streaming from
// it, from Debian's PostgreSQL binaries (initdb, pg_ctl, pg_basebackup,
// pg_rewind), on loopback ports of their own under a temporary directory:
// what operators run under a failover manager, for the failover tests. It
// kills, promotes, rewinds and re-joins nodes as a failover manager (or an
// operator) would, and nothing more: which node is primary is what this
// package made it, never what it guessed.
//
// The binaries refuse to run as root, so when this process is root they
// run as the postgres user, in directories it owns.
package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Options shape a cluster.
type Options struct {
	// Synchronous has the primary name the standby in
	// synchronous_standby_names, so that a commit returns once the standby
	// has flushed it: what an operator who cannot lose a write runs.
	Synchronous bool
	// Standbys is how many standbys stream from the primary (b, c, ...),
	// each asynchronous but for b with Synchronous; 0 is one. The
	// failover methods (Other, Rejoin) know two nodes only; more serve
	// the tests of reads from replicas.
	Standbys int
}

// Cluster is two nodes, a and b, listed in that order in URL: one primary,
// one standby (or, after a failover, a node that is neither until it is
// re-joined); with Options.Standbys, more standbys after b.
type Cluster struct {
	bin  string
	root string
	cred *syscall.Credential // nil: the binaries run as this process's user
	opts Options

	mu      sync.Mutex
	nodes   []*Node
	primary *Node
}

// Node is one PostgreSQL server of the cluster.
type Node struct {
	c *Cluster
	// Name is its cluster_name and the application_name it streams as,
	// the name synchronous_standby_names gives it.
	Name string
	Port int
	dir  string
	logs string
}

// Binaries is the directory of Debian's PostgreSQL server programs that
// holds every one this package runs (the newest version installed).
func Binaries() (string, error) {
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for i := len(found) - 1; i >= 0; i-- {
		ok := true
		for _, p := range []string{"initdb", "pg_ctl", "pg_basebackup", "pg_rewind", "postgres"} {
			if _, err := os.Stat(filepath.Join(found[i], p)); err != nil {
				ok = false
			}
		}
		if ok {
			return found[i], nil
		}
	}
	return "", errors.New("no PostgreSQL server binaries (initdb, pg_ctl, pg_basebackup, pg_rewind) under /usr/lib/postgresql; apt-get install postgresql")
}

// Start makes node a a primary (initdb), node b a standby of it
// (pg_basebackup), starts both and waits until b streams, as a synchronous
// standby with opts.Synchronous. Close stops and removes them.
func Start(bin string, opts Options) (*Cluster, error) {
	root, err := os.MkdirTemp("", "pds-pgcluster-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{bin: bin, root: root, opts: opts}
	if err := c.runAsPostgres(); err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	for i := range 1 + max(1, opts.Standbys) {
		name := string(rune('a' + i))
		port, err := freePort()
		if err != nil {
			c.Close()
			return nil, err
		}
		c.nodes = append(c.nodes, &Node{c: c, Name: name, Port: port, dir: filepath.Join(root, name),
			logs: filepath.Join(root, name+".log")})
	}
	a := c.nodes[0]
	if err := c.run("initdb", "-D", a.dir, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8"); err != nil {
		c.Close()
		return nil, err
	}
	conf, err := os.OpenFile(filepath.Join(a.dir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = conf.WriteString(sharedSettings)
		err = errors.Join(err, conf.Close())
	}
	if err == nil {
		err = a.Start()
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	c.primary = a
	for _, b := range c.nodes[1:] {
		if err := c.run("pg_basebackup", "-D", b.dir, "-h", "127.0.0.1", "-p", strconv.Itoa(a.Port), "-U", "postgres",
			"-X", "stream", "-c", "fast", "--no-sync"); err != nil {
			c.Close()
			return nil, err
		}
		if err := c.join(b); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// runAsPostgres has the binaries run as the postgres user when this
// process is root, in a root directory that user owns.
func (c *Cluster) runAsPostgres() error {
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return fmt.Errorf("the postgres user, whom the server programs run as under root: %w", err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	return os.Chown(c.root, int(uid), int(gid))
}

// freePort is a loopback port nothing listens on now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// run runs one of the server programs, as the postgres user under root.
func (c *Cluster) run(name string, args ...string) error {
	cmd := exec.Command(filepath.Join(c.bin, name), args...)
	cmd.Dir = c.root
	cmd.Env = append(os.Environ(), "LC_ALL=C", "PGCONNECT_TIMEOUT=5")
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// writeFile writes a file of a node's data directory, owned as the server
// wants it.
func (c *Cluster) writeFile(path, content string) error {
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		return err
	}
	if c.cred != nil {
		return os.Chown(path, int(c.cred.Uid), int(c.cred.Gid))
	}
	return nil
}

// URL reaches database on whichever node takes writes: both hosts, with
// target_session_attrs=read-write, the form failover managers print
// (pg_autoctl show uri).
func (c *Cluster) URL(database string) string {
	var hosts []string
	for _, n := range c.nodes {
		hosts = append(hosts, fmt.Sprintf("127.0.0.1:%d", n.Port))
	}
	return fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable&target_session_attrs=read-write", strings.Join(hosts, ","), database)
}

// Nodes are a and b, in the order of URL.
func (c *Cluster) Nodes() []*Node { return c.nodes }

// Primary is the node this package last made primary.
func (c *Cluster) Primary() *Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.primary
}

// Other is the node that is not n.
func (c *Cluster) Other(n *Node) *Node {
	if c.nodes[0] == n {
		return c.nodes[1]
	}
	return c.nodes[0]
}

// Close stops every node at once and removes their files.
func (c *Cluster) Close() {
	for _, n := range c.nodes {
		n.Thaw()
		if _, err := os.Stat(filepath.Join(n.dir, "postmaster.pid")); err == nil {
			_ = c.run("pg_ctl", "stop", "-D", n.dir, "-m", "immediate", "-w", "-t", "30")
		}
	}
	os.RemoveAll(c.root)
}

// Logs is what node n's server logged, for a failing test.
func (n *Node) Logs() string {
	raw, _ := os.ReadFile(n.logs)
	return string(raw)
}

// URL reaches database on this node alone.
func (n *Node) URL(database string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", n.Port, database)
}

// settings are a node's own settings, given on the command line at every
// start; what every node shares is in its postgresql.conf (sharedSettings).
func (n *Node) settings(extra ...string) string {
	s := []string{"-c port=" + strconv.Itoa(n.Port), "-c unix_socket_directories=" + n.c.root, "-c cluster_name=" + n.Name}
	return strings.Join(append(s, extra...), " ")
}

// sharedSettings end the first node's postgresql.conf, which pg_basebackup
// and pg_rewind copy to the other: what pg_rewind needs (hint bits in the
// WAL, and the WAL back to the last checkpoint before the timelines
// diverged) also holds in the crash recovery it runs itself, which reads
// the file and not the command line. synchronous_standby_names is left to
// ALTER SYSTEM and a reload.
const sharedSettings = `
listen_addresses = '127.0.0.1'
wal_log_hints = on
wal_keep_size = '256MB'
# The tests kill processes, never the machine: the page cache survives,
# and the machine is shared.
fsync = off
autovacuum = off
`

// Start starts the node as what its data directory says (a standby when it
// holds standby.signal) and waits until it takes connections, after crash
// recovery if it was killed.
func (n *Node) Start() error { return n.start() }

// StartAlone starts a node as a primary that waits for no standby, as an
// operator restarting an old primary on its own would: after a promotion
// elsewhere, a split brain.
func (n *Node) StartAlone() error { return n.start("-c synchronous_standby_names=") }

func (n *Node) start(extra ...string) error {
	err := n.c.run("pg_ctl", "start", "-D", n.dir, "-w", "-t", "120", "-l", n.logs, "-o", n.settings(extra...))
	if err != nil {
		return fmt.Errorf("%w\n%s", err, n.Logs())
	}
	return nil
}

// Stop stops the node: mode "fast" disconnects every session and shuts
// down cleanly, "immediate" ends every process at once.
func (n *Node) Stop(mode string) error {
	return n.c.run("pg_ctl", "stop", "-D", n.dir, "-m", mode, "-w", "-t", "60")
}

// Kill ends the node's postmaster with SIGKILL, as a crash would, and waits
// until its backends, which notice it gone, have exited too.
func (n *Node) Kill() error {
	pids := n.pids()
	if len(pids) == 0 {
		return fmt.Errorf("node %s runs no server", n.Name)
	}
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, pid := range pids {
		for syscall.Kill(pid, 0) == nil {
			if time.Now().After(deadline) {
				return fmt.Errorf("node %s: process %d outlived its postmaster for 30s", n.Name, pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return nil
}

// Freeze stops every process of the node (SIGSTOP): connections stay open
// and nothing answers, as when its host hangs.
func (n *Node) Freeze() {
	for _, pid := range n.pids() {
		_ = syscall.Kill(pid, syscall.SIGSTOP)
	}
}

// Thaw lets every process of the node go on (SIGCONT).
func (n *Node) Thaw() {
	for _, pid := range n.pids() {
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
}

// pids lists the postmaster (from postmaster.pid) and its children, the
// postmaster first; none when it does not run.
func (n *Node) pids() []int {
	raw, err := os.ReadFile(filepath.Join(n.dir, "postmaster.pid"))
	if err != nil {
		return nil
	}
	first, _, _ := strings.Cut(string(raw), "\n")
	postmaster, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || syscall.Kill(postmaster, 0) != nil {
		return nil
	}
	pids := []int{postmaster}
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range procs {
		stat, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces.
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(postmaster) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			pids = append(pids, pid)
		}
	}
	return pids
}

// Promote makes n, a standby, the primary (pg_ctl promote, waiting until
// it takes writes). It waits for no standby until one is re-joined: a
// failover manager left with one node runs it so (Patroni without
// synchronous_mode_strict, pg_auto_failover with one standby), or no
// write could succeed until the old primary came back.
func (c *Cluster) Promote(n *Node) error {
	if err := c.run("pg_ctl", "promote", "-D", n.dir, "-w", "-t", "60"); err != nil {
		return err
	}
	c.mu.Lock()
	c.primary = n
	c.mu.Unlock()
	return nil
}

// Rejoin makes n, stopped or killed, a standby of the primary again: it
// rewinds it to where the primary's timeline left its own (pg_rewind, which
// first completes crash recovery of a node that was killed), starts it
// streaming from the primary, names it synchronous there with
// Options.Synchronous, and waits until it streams.
func (c *Cluster) Rejoin(n *Node) error {
	p := c.Primary()
	// pg_rewind reads the source's timeline from its control file, which
	// a promotion updates only at its checkpoint, which runs spread out:
	// before it, the source looks like the target's own timeline, and
	// nothing would be rewound.
	if err := p.Exec(`CHECKPOINT`); err != nil {
		return err
	}
	if err := c.run("pg_rewind", "--target-pgdata", n.dir,
		fmt.Sprintf("--source-server=host=127.0.0.1 port=%d user=postgres dbname=postgres", p.Port)); err != nil {
		return err
	}
	return c.join(n)
}

// join starts n, a copy of the primary's data directory, as its standby and
// waits until it streams (synchronously with Options.Synchronous).
func (c *Cluster) join(n *Node) error {
	p := c.Primary()
	// The copy holds the primary's settings; a standby's own are where it
	// streams from, and none of the synchronous standbys it would wait for
	// once promoted.
	conf := fmt.Sprintf("primary_conninfo = 'host=127.0.0.1 port=%d user=postgres application_name=%s'\n", p.Port, n.Name)
	if err := c.writeFile(filepath.Join(n.dir, "postgresql.auto.conf"), conf); err != nil {
		return err
	}
	if err := c.writeFile(filepath.Join(n.dir, "standby.signal"), ""); err != nil {
		return err
	}
	if err := n.Start(); err != nil {
		return err
	}
	if c.synchronous(n) {
		if err := p.Exec(fmt.Sprintf(`ALTER SYSTEM SET synchronous_standby_names = '"%s"'`, n.Name), `SELECT pg_reload_conf()`); err != nil {
			return err
		}
	}
	return c.WaitStreaming(n)
}

// synchronous says whether n is (or was) to be the primary's synchronous
// standby: with Options.Synchronous, either of the first two nodes, which
// trade places in a failover.
func (c *Cluster) synchronous(n *Node) bool {
	return c.opts.Synchronous && (n == c.nodes[0] || n == c.nodes[1])
}

// WaitStreaming waits, at most a minute, until n streams from the primary:
// as its synchronous standby with Options.Synchronous.
func (c *Cluster) WaitStreaming(n *Node) error {
	want := "async"
	if c.synchronous(n) {
		want = "sync"
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		state, err := c.Primary().query(ctx, fmt.Sprintf(
			`SELECT sync_state FROM pg_stat_replication WHERE application_name = '%s' AND state = 'streaming'`, n.Name))
		if err == nil && state == want {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("node %s did not stream from %s as %s within a minute (%q, %v)\n%s", n.Name, c.Primary().Name, want,
				state, err, n.Logs())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Exec runs statements on n's postgres database, each on its own.
func (n *Node) Exec(statements ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgconn.Connect(ctx, n.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	for _, s := range statements {
		if _, err := conn.Exec(ctx, s).ReadAll(); err != nil {
			return fmt.Errorf("node %s: %s: %w", n.Name, s, err)
		}
	}
	return nil
}

// Query reads the first column of the first row of a statement on n's
// postgres database ("" when it answers none).
func (n *Node) Query(statement string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return n.query(ctx, statement)
}

// SetApplyDelay has n, a standby, apply each commit it receives d after
// the primary made it (recovery_min_apply_delay; 0 for none): a standby
// that lags. It takes effect at once (a reload).
func (n *Node) SetApplyDelay(d time.Duration) error {
	path := filepath.Join(n.dir, "postgresql.auto.conf")
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var keep []string
	for _, line := range strings.Split(strings.TrimRight(string(raw), "\n"), "\n") {
		if !strings.HasPrefix(line, "recovery_min_apply_delay") {
			keep = append(keep, line)
		}
	}
	keep = append(keep, fmt.Sprintf("recovery_min_apply_delay = '%dms'", d.Milliseconds()))
	if err := n.c.writeFile(path, strings.Join(keep, "\n")+"\n"); err != nil {
		return err
	}
	return n.c.run("pg_ctl", "reload", "-D", n.dir)
}

// query reads the first column of the first row of a statement on n ("" when
// it answers none).
func (n *Node) query(ctx context.Context, statement string) (string, error) {
	conn, err := pgconn.Connect(ctx, n.URL("postgres")+"&connect_timeout=5")
	if err != nil {
		return "", err
	}
	defer conn.Close(context.Background())
	res, err := conn.Exec(ctx, statement).ReadAll()
	if err != nil {
		return "", err
	}
	if len(res) == 0 || len(res[0].Rows) == 0 {
		return "", nil
	}
	return string(res[0].Rows[0][0]), nil
}
