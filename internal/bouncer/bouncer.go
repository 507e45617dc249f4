//go:build linux

package bouncer

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver, to see a database served
)

// Bouncer is one pgbouncer process, with its defaults but for the pool
// mode (transaction), a server pool of PoolSize connections per database,
// and server connections closed after two idle seconds. It takes no
// ignore_startup_parameters: a setting a client sends at connection is
// refused, as operators meet it.
type Bouncer struct {
	dir  string
	port int
	cmd  *exec.Cmd
	// server is where the pooler connects: host, port, database and user.
	host, serverPort, dbname, user string

	mu      sync.Mutex
	entries []string // the lines of databases.ini
}

// Binary finds pgbouncer on PATH or where Debian puts it ("" when none).
func Binary() string {
	if p, err := exec.LookPath("pgbouncer"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/pgbouncer"); err == nil {
		return "/usr/sbin/pgbouncer"
	}
	return ""
}

// Start runs the pgbouncer at bin in front of the server of serverURL (its
// host, port, database and user; trust authentication), with poolSize
// server connections per database. It dies with this process, and runs as
// the postgres user when this process is root (pgbouncer refuses root).
func Start(bin, serverURL string, poolSize int) (*Bouncer, error) {
	u, err := url.Parse(serverURL)
	if err != nil {
		return nil, err
	}
	b := &Bouncer{host: u.Hostname(), serverPort: u.Port(), dbname: strings.TrimPrefix(u.Path, "/"), user: u.User.Username()}
	if b.serverPort == "" {
		b.serverPort = "5432"
	}
	if b.dir, err = os.MkdirTemp("", "pds-pgbouncer-"); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b.port = ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	conf := fmt.Sprintf(`[databases]
%%include %s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
default_pool_size = %d
max_client_conn = 2000
server_idle_timeout = 2
logfile = %s
pidfile = %s
`, b.path("databases.ini"), b.port, b.path("userlist.txt"), poolSize, b.path("pgbouncer.log"), b.path("pgbouncer.pid"))
	for name, content := range map[string]string{
		"pgbouncer.ini": conf, "databases.ini": "", "userlist.txt": fmt.Sprintf("%q \"\"\n", b.user),
	} {
		if err := os.WriteFile(b.path(name), []byte(content), 0o644); err != nil {
			return nil, err
		}
	}
	b.cmd = exec.Command(bin, b.path("pgbouncer.ini"))
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if os.Geteuid() == 0 {
		pg, err := user.Lookup("postgres")
		if err != nil {
			return nil, err
		}
		uid, _ := strconv.ParseUint(pg.Uid, 10, 32)
		gid, _ := strconv.ParseUint(pg.Gid, 10, 32)
		b.cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(b.dir, int(uid), int(gid)); err != nil {
			return nil, err
		}
	}
	if err := b.cmd.Start(); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", b.port), time.Second)
		if err == nil {
			c.Close()
			return b, nil
		}
		if time.Now().After(deadline) {
			logs, _ := os.ReadFile(b.path("pgbouncer.log"))
			b.Close()
			return nil, fmt.Errorf("pgbouncer did not listen on %d: %v\n%s", b.port, err, logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (b *Bouncer) path(name string) string { return filepath.Join(b.dir, name) }

// URL is the pooler's address of database name, as a client gives it.
func (b *Bouncer) URL(name string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", b.user, b.port, name)
}

// AddSchema adds a database entry named for schema, on the server's
// database, whose server connections use that schema (the pooler refuses
// a search_path sent by a client), and returns its URL once the pooler
// serves it.
func (b *Bouncer) AddSchema(ctx context.Context, schema string) (string, error) {
	b.mu.Lock()
	b.entries = append(b.entries, fmt.Sprintf("%s = host=%s port=%s dbname=%s user=%s connect_query='SET search_path TO %s'",
		schema, b.host, b.serverPort, b.dbname, b.user, schema))
	err := os.WriteFile(b.path("databases.ini"), []byte(strings.Join(b.entries, "\n")+"\n"), 0o644)
	if err == nil {
		err = b.cmd.Process.Signal(syscall.SIGHUP) // reload the configuration
	}
	b.mu.Unlock()
	if err != nil {
		return "", err
	}
	u := b.URL(schema)
	db, err := sql.Open("pgx", u+"&default_query_exec_mode=exec")
	if err != nil {
		return "", err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		var got string
		err := db.QueryRowContext(ctx, `SELECT current_schema()`).Scan(&got)
		if err == nil && got == schema {
			return u, nil
		}
		if ctx.Err() != nil {
			if err == nil {
				err = errors.New("current_schema() is " + got)
			}
			return "", fmt.Errorf("pgbouncer does not serve %s: %w", schema, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Close ends the pooler and removes its files.
func (b *Bouncer) Close() {
	if b.cmd != nil && b.cmd.Process != nil {
		_ = b.cmd.Process.Kill()
		_ = b.cmd.Wait()
	}
	os.RemoveAll(b.dir)
}
