package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// process is a server pdsbench started in a process of its own (pds serve,
// or a ceiling of ceiling.go), so that what it measures shares no garbage
// collector, cache or background work with the load generator or with
// another server.
type process struct {
	name string
	cmd  *exec.Cmd
	// base is where it serves, http://127.0.0.1:port.
	base string
	// logPath holds what it wrote to stdout and stderr.
	logPath string
	exited  chan struct{}
	exitErr error
	// pprofAddr is where pds serve serves net/http/pprof ("" for none),
	// and profile the CPU profile being taken through it (profile.go).
	pprofAddr string
	profile   *cpuProfile
	// metricsAddr is where it serves its metrics, with --replica ("" for
	// none): printReadTargets reads them.
	metricsAddr string
	stopErr     error
	stopped     bool
}

// startupLimit is how long a server may take to answer once started.
const startupLimit = 2 * time.Minute

// startProcess runs bin with args in env (nil: this process's), its stdout
// and stderr to logPath, and waits until it serves on addr: until
// readyPath answers 200, or with no readyPath until it accepts a
// connection.
func startProcess(name, logPath, addr, readyPath string, env []string, bin string, args ...string) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child holds its own descriptor
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr, cmd.Env = logFile, logFile, env
	// A process group of its own: a Ctrl-C at the terminal reaches
	// pdsbench alone, which ends the rows and stops each server once, with
	// SIGTERM, as it does at the end of a group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, base: "http://" + addr, logPath: logPath, exited: make(chan struct{})}
	go func() {
		p.exitErr = cmd.Wait()
		close(p.exited)
	}()
	deadline := time.Now().Add(startupLimit)
	client := &http.Client{Timeout: time.Second}
	for {
		if ready(client, addr, readyPath) {
			return p, nil
		}
		select {
		case <-p.exited:
			return nil, fmt.Errorf("%s exited before serving (%v):\n%s", name, p.exitErr, p.logTail())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.kill()
			return nil, fmt.Errorf("%s did not serve on %s within %s:\n%s", name, addr, startupLimit, p.logTail())
		}
	}
}

func ready(client *http.Client, addr, readyPath string) bool {
	if readyPath == "" {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
		}
		return err == nil
	}
	res, err := client.Get("http://" + addr + readyPath)
	if err != nil {
		return false
	}
	res.Body.Close()
	return res.StatusCode == http.StatusOK
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// stopLimit is how long a server may take to stop after SIGTERM: pds
// serve's --shutdown-grace (30 s) and some.
const stopLimit = 45 * time.Second

// stop finishes the profile being taken, sends SIGTERM and waits for the
// process to exit; it says how the process ended unless it exited 0. It
// may be called again, and returns the same.
func (p *process) stop() error {
	if p.stopped {
		return p.stopErr
	}
	p.stopped = true
	var errs []error
	if p.profile != nil {
		if err := p.profile.finish(); err != nil {
			errs = append(errs, fmt.Errorf("%s: CPU profile: %w", p.name, err))
		}
	}
	select {
	case <-p.exited:
		errs = append(errs, fmt.Errorf("%s had exited before it was stopped (%v):\n%s", p.name, p.exitErr, p.logTail()))
		p.stopErr = errors.Join(errs...)
		return p.stopErr
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		if p.exitErr != nil {
			errs = append(errs, fmt.Errorf("%s: after SIGTERM: %w:\n%s", p.name, p.exitErr, p.logTail()))
		}
	case <-time.After(stopLimit):
		p.kill()
		errs = append(errs, fmt.Errorf("%s had not stopped %s after SIGTERM; killed", p.name, stopLimit))
	}
	p.stopErr = errors.Join(errs...)
	return p.stopErr
}

func (p *process) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// logTail is the end of what the process wrote, for an error.
func (p *process) logTail() string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return err.Error()
	}
	const most = 4 << 10
	if len(b) > most {
		b = b[len(b)-most:]
	}
	return string(bytes.TrimSpace(b))
}

// cpu is the CPU time the process has used (0 for nil, which is a
// server pdsbench did not start).
func (p *process) cpu() time.Duration {
	if p == nil {
		return 0
	}
	return cpuOf(p.pid())
}

// cpuOf is the CPU time, user and system, process pid has used: utime and
// stime of /proc/PID/stat, in clock ticks of 1/100 s (Linux reports them
// in USER_HZ, which is 100). 0 when unreadable.
func cpuOf(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The fields after the command's name, in parentheses, which may hold
	// spaces: state is field 3, utime 14 and stime 15.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(utime+stime) * (time.Second / 100)
}

// resident is the process's resident memory, VmRSS of /proc/PID/status.
func (p *process) resident() (int64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(p.pid()) + "/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", p.pid())
}

// freeAddr is a loopback address with a port free at the time of asking,
// for a server to bind next.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
