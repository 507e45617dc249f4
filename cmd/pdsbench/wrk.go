package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The throughput rows are driven by wrk (Debian's), in a process of its
// own: the lightest plain generator at hand, so that it takes no more of
// the machine's cores from a bare net/http handler than from the service.
// pdsbench's own Go generator (load.go) takes a larger share; row 6 quotes
// both until they agree.

// wrkThreads is wrk's threads: one event loop drives 64 connections on
// loopback well past what the service serves, and a second would take a
// share of the other core.
const wrkThreads = 1

// wrkScript is what each request of a wrk run is: a method, a path (one of
// a list, in turn), a body made from an id unique across the run (%s, once
// or twice), with the service's key.
type wrkScript struct {
	method string
	// paths are the paths taken in turn (one: always it); path of a list
	// of one is also how a body-less GET is written.
	paths []string
	// body is a format with %s (an id unique across the run's requests
	// and threads) once, or twice with bodyTwice; "" for none.
	body      string
	bodyTwice bool
	// bodies, when set, are the bodies taken in turn instead.
	bodies []string
	key    string
}

// wrkResult is what one wrk run measured.
type wrkResult struct {
	requests int
	elapsed  time.Duration
	p50, p99 time.Duration
	// failed counts the answers that were not 2xx or 3xx and the socket
	// errors (connect, read, write, timeout).
	failed int
	// cpu is the CPU time the server's process spent during the run: less
	// sensitive than throughput to other work on the machine.
	cpu time.Duration
}

// cpuPerRequest is the server's CPU time per request answered.
func (r wrkResult) cpuPerRequest() time.Duration {
	if r.requests == 0 {
		return 0
	}
	return r.cpu / time.Duration(r.requests)
}

// target is a server a wrk run drives: its base URL, and its process,
// whose CPU time the run reads (nil for one pdsbench did not start).
type target struct {
	base string
	proc *process
}

func (r wrkResult) perSecond() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.requests) / r.elapsed.Seconds()
}

// lua is the script wrk runs: the request, and at the end one line the
// run is read from.
func (s wrkScript) lua(run string) string {
	var b strings.Builder
	b.WriteString("local paths = {")
	for i, p := range s.paths {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(strconv.Quote(p))
	}
	b.WriteString("}\n")
	b.WriteString("local bodies = {")
	for i, body := range s.bodies {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(strconv.Quote(body))
	}
	b.WriteString("}\n")
	fmt.Fprintf(&b, "local method, body, twice, run = %q, %q, %v, %q\n", s.method, s.body, s.bodyTwice, run)
	// thread_id is a global of each thread's state, set by setup.
	b.WriteString(`local counter, n = 0, #paths
thread_id = thread_id or 0
local headers = {}
`)
	if s.key != "" {
		fmt.Fprintf(&b, "headers[\"Authorization\"] = %q\n", "Bearer "+s.key)
	}
	if s.body != "" || len(s.bodies) > 0 {
		b.WriteString("headers[\"Content-Type\"] = \"application/json\"\n")
	}
	b.WriteString(`local next_id = 0
function setup(thread)
  thread:set("thread_id", next_id)
  next_id = next_id + 1
end
function init(args)
  counter = 0
end
function request()
  counter = counter + 1
  local path = paths[(counter % n) + 1]
  if #bodies > 0 then
    return wrk.format(method, path, headers, bodies[((counter + thread_id * 7919) % #bodies) + 1])
  end
  if body == "" then
    return wrk.format(method, path, headers)
  end
  local i = string.format("%s-%d-%d", run, thread_id, counter)
  local b
  if twice then b = string.format(body, i, i) else b = string.format(body, i) end
  return wrk.format(method, path, headers, b)
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("WRK %d %d %d %d %d\n", summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99), e.status + e.connect + e.read + e.write + e.timeout))
end
`)
	return b.String()
}

// runWrk runs wrk on t with conns connections for d.
func runWrk(ctx context.Context, t target, s wrkScript, conns int, d time.Duration) (wrkResult, error) {
	dir, err := os.MkdirTemp("", "pdsbench-wrk-")
	if err != nil {
		return wrkResult{}, err
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "run.lua")
	if err := os.WriteFile(script, []byte(s.lua(domainHex())), 0o600); err != nil {
		return wrkResult{}, err
	}
	secs := max(1, int(d.Round(time.Second)/time.Second))
	cmd := exec.CommandContext(ctx, "wrk", "-t", strconv.Itoa(wrkThreads), "-c", strconv.Itoa(conns), "-d", strconv.Itoa(secs)+"s",
		"--timeout", "10s", "-s", script, t.base+s.paths[0])
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	cpu := t.proc.cpu()
	err = cmd.Run()
	cpu = t.proc.cpu() - cpu
	if err != nil {
		return wrkResult{}, fmt.Errorf("wrk: %w: %s", err, stderr.String())
	}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 6 || f[0] != "WRK" {
			continue
		}
		var n [5]int64
		for i := range n {
			if n[i], err = strconv.ParseInt(f[i+1], 10, 64); err != nil {
				return wrkResult{}, fmt.Errorf("wrk printed %q: %w", sc.Text(), err)
			}
		}
		return wrkResult{requests: int(n[0]), elapsed: time.Duration(n[1]) * time.Microsecond,
			p50: time.Duration(n[2]) * time.Microsecond, p99: time.Duration(n[3]) * time.Microsecond, failed: int(n[4]), cpu: cpu}, nil
	}
	return wrkResult{}, errors.New("wrk printed no result: " + out.String())
}

// haveWrk says whether wrk is on PATH.
func haveWrk() bool {
	_, err := exec.LookPath("wrk")
	return err == nil
}

// wrkTurns runs s with conns connections on each target in turn, a
// second of each unmeasured first, then ratioRounds rounds, and returns
// what each target served in all and, for each target after the first,
// the ratios first ÷ it of the rounds, sorted.
func (m *measure) wrkTurns(targets []target, s wrkScript, conns int) ([]wrkResult, [][]float64, error) {
	slice := max(time.Second, m.c.duration/ratioRounds)
	for _, t := range targets {
		if _, err := runWrk(m.ctx, t, s, conns, time.Second); err != nil {
			return nil, nil, err
		}
	}
	total := make([]wrkResult, len(targets))
	ratios := make([][]float64, len(targets)-1)
	for range ratioRounds {
		round := make([]wrkResult, len(targets))
		for i, t := range targets {
			r, err := runWrk(m.ctx, t, s, conns, slice)
			if err != nil {
				return nil, nil, err
			}
			round[i], total[i] = r, total[i].add(r)
		}
		for i := range ratios {
			if round[i+1].perSecond() > 0 {
				ratios[i] = append(ratios[i], round[0].perSecond()/round[i+1].perSecond())
			}
		}
	}
	for _, r := range ratios {
		slices.Sort(r)
	}
	return total, ratios, nil
}

// add is r and o as one run; its percentiles are the larger of the two
// (wrk reports percentiles, not latencies).
func (r wrkResult) add(o wrkResult) wrkResult {
	return wrkResult{requests: r.requests + o.requests, elapsed: r.elapsed + o.elapsed,
		p50: max(r.p50, o.p50), p99: max(r.p99, o.p99), failed: r.failed + o.failed, cpu: r.cpu + o.cpu}
}

// ratioNote words the median of sorted ratios and the turns behind it.
func ratioNote(ratios []float64, of string, a, b float64) string {
	parts := make([]string, len(ratios))
	for i, r := range ratios {
		parts[i] = fmt.Sprintf("%.3f", r)
	}
	return fmt.Sprintf("**%.3f of %s**, the median of %d turns (%s; %.0f ÷ %.0f req/s in all)",
		median(ratios), of, len(ratios), strings.Join(parts, ", "), a, b)
}
