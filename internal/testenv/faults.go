package testenv

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// Real faults for tests: a PostgreSQL cluster of the test's own, which it
// stops, restarts as after a crash and freezes, and a small disk that it
// fills. Both need root (CI runs as root); elsewhere they skip, except
// under CI, where that is a failure.

// needRoot skips (fails under CI) a test that needs root.
func needRoot(t testing.TB, what string) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s needs root, and under CI the fault tests must run", what)
	}
	t.Skipf("%s needs root; skipping", what)
}

// Cluster is a PostgreSQL cluster of one test's own, run by the postgres
// user from Debian's packages (initdb and pg_ctl), listening on a loopback
// port of its own.
type Cluster struct {
	t    testing.TB
	bin  string // the directory of initdb and pg_ctl
	dir  string // data directory
	port int
	// URL reaches the cluster's postgres database as the postgres user.
	URL  string
	uid  uint32
	gid  uint32
	logs string
}

// NewCluster initialises and starts a cluster; it is stopped and removed
// when the test ends.
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	needRoot(t, "a private PostgreSQL cluster")
	bin, err := postgresBin()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Fatalf("the postgres user: %v", err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	root, err := os.MkdirTemp("", "pds-cluster-")
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{t: t, bin: bin, dir: filepath.Join(root, "data"), uid: uint32(uid), gid: uint32(gid),
		logs: filepath.Join(root, "postgres.log")}
	if err := os.Chown(root, int(c.uid), int(c.gid)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Thaw()
		_ = c.run("pg_ctl", "stop", "-D", c.dir, "-m", "immediate", "-w")
		_ = os.RemoveAll(root)
	})
	c.port = freePort(t)
	c.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
	if err := c.run("initdb", "-D", c.dir, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8"); err != nil {
		t.Fatalf("initdb: %v", err)
	}
	c.Start()
	return c
}

// postgresBin finds the directory of Debian's initdb and pg_ctl.
func postgresBin() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if _, err := exec.LookPath("pg_ctl"); err == nil {
			return filepath.Dir(p), nil
		}
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(found) == 0 {
		return "", errors.New("no initdb and pg_ctl (Debian's postgresql package) on this machine")
	}
	return filepath.Dir(found[len(found)-1]), nil
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// run runs one of the cluster's programs as the postgres user.
func (c *Cluster) run(name string, args ...string) error {
	cmd := exec.Command(filepath.Join(c.bin, name), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: c.uid, Gid: c.gid}}
	cmd.Dir = filepath.Dir(c.dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// Start starts the cluster and waits until it takes connections (after
// crash recovery, when it was stopped in immediate mode).
func (c *Cluster) Start() {
	c.t.Helper()
	opts := fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -k %s -c autovacuum=off", c.port, filepath.Dir(c.dir))
	if err := c.run("pg_ctl", "start", "-D", c.dir, "-w", "-t", "60", "-l", c.logs, "-o", opts); err != nil {
		logs, _ := os.ReadFile(c.logs)
		c.t.Fatalf("%v\n%s", err, logs)
	}
}

// Stop stops the cluster: mode "fast" disconnects every session and shuts
// down cleanly, "immediate" ends every process at once, as a crash would,
// so that the next Start runs crash recovery.
func (c *Cluster) Stop(mode string) {
	c.t.Helper()
	if err := c.run("pg_ctl", "stop", "-D", c.dir, "-m", mode, "-w"); err != nil {
		c.t.Fatal(err)
	}
}

// Freeze stops every process of the cluster (SIGSTOP): connections stay
// open and nothing answers, as when a database host hangs.
func (c *Cluster) Freeze() {
	c.t.Helper()
	pids := c.pids()
	if len(pids) == 0 {
		c.t.Fatal("freeze: the cluster runs no process")
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGSTOP)
	}
}

// Thaw lets every process of the cluster go on (SIGCONT).
func (c *Cluster) Thaw() {
	for _, pid := range c.pids() {
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
}

// pids lists the postmaster (from postmaster.pid) and its children.
func (c *Cluster) pids() []int {
	raw, err := os.ReadFile(filepath.Join(c.dir, "postmaster.pid"))
	if err != nil {
		return nil
	}
	first, _, _ := strings.Cut(string(raw), "\n")
	postmaster, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		return nil
	}
	pids := []int{postmaster}
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range procs {
		stat, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces, so read past
		// its closing parenthesis.
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(postmaster) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			pids = append(pids, pid)
		}
	}
	return pids
}

// SmallDisk is a tmpfs of a few megabytes mounted for one test, which Fill
// fills with a ballast file and Free frees.
type SmallDisk struct {
	t   testing.TB
	Dir string
}

// NewSmallDisk mounts a tmpfs of size bytes; it is unmounted when the test
// ends.
func NewSmallDisk(t testing.TB, size int64) *SmallDisk {
	t.Helper()
	needRoot(t, "mounting a tmpfs")
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount a tmpfs: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		// The server may still be closing its files; a lazy unmount lets
		// the temporary directory go.
		_ = exec.Command("umount", "-l", dir).Run()
	})
	return &SmallDisk{t: t, Dir: dir}
}

// ballast is the file Fill writes.
func (d *SmallDisk) ballast() string { return filepath.Join(d.Dir, "ballast") }

// Fill writes the ballast until the disk is full.
func (d *SmallDisk) Fill() {
	d.t.Helper()
	f, err := os.OpenFile(d.ballast(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		d.t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				break
			}
			d.t.Fatal(err)
		}
	}
	// The last partial pages too.
	for _, n := range []int{4096, 512, 1} {
		for {
			if _, err := f.Write(chunk[:n]); err != nil {
				break
			}
		}
	}
}

// Free deletes the ballast.
func (d *SmallDisk) Free() {
	d.t.Helper()
	if err := os.Remove(d.ballast()); err != nil {
		d.t.Fatal(err)
	}
}
