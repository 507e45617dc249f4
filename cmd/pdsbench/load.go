package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// request is one HTTP request of a load run: the i-th of the run.
type request struct {
	method, path string
	body         []byte
	// want is the status a correct answer has.
	want int
}

// load is a closed-loop generator: conns workers, each with a keep-alive
// connection of its own, send requests one after another until count
// requests were sent or the duration passed, and record every latency.
type load struct {
	client *http.Client
	base   string
	key    string
	// cookie, when set, is sent as the Cookie header (a console session).
	cookie  string
	conns   int
	count   int           // 0: no bound
	timeout time.Duration // 0: no bound
	next    func(i int) request
	// check looks at a correct answer's body (nil: status only).
	check func(i int, body []byte) error
}

// result is what a load run measured.
type result struct {
	latencies []time.Duration // sorted
	elapsed   time.Duration
	errors    int
	firstErr  error
}

func (r result) n() int { return len(r.latencies) }

// add is r and o as one run: their latencies, times and errors.
func (r result) add(o result) result {
	out := result{latencies: append(slices.Clone(r.latencies), o.latencies...), elapsed: r.elapsed + o.elapsed,
		errors: r.errors + o.errors, firstErr: r.firstErr}
	if out.firstErr == nil {
		out.firstErr = o.firstErr
	}
	slices.Sort(out.latencies)
	return out
}

// perSecond is the throughput: requests answered per second of the run.
func (r result) perSecond() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(len(r.latencies)) / r.elapsed.Seconds()
}

// percentile is the nearest-rank percentile of the sorted latencies.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p/100*float64(len(sorted)) + 0.5)
	i = min(max(i, 1), len(sorted))
	return sorted[i-1]
}

func (r result) p50() time.Duration { return percentile(r.latencies, 50) }
func (r result) p99() time.Duration { return percentile(r.latencies, 99) }

// newClient is a loopback client that keeps one connection per worker.
func newClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		MaxConnsPerHost:     conns,
		DisableCompression:  true,
		IdleConnTimeout:     time.Minute,
	}}
}

func (l load) run(ctx context.Context) result {
	var (
		issued  atomic.Int64
		mu      sync.Mutex
		res     result
		wg      sync.WaitGroup
		started = time.Now()
	)
	deadline := time.Time{}
	if l.timeout > 0 {
		deadline = started.Add(l.timeout)
	}
	for range l.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			errs := 0
			var firstErr error
			for ctx.Err() == nil {
				i := int(issued.Add(1)) - 1
				if (l.count > 0 && i >= l.count) || (!deadline.IsZero() && time.Now().After(deadline)) {
					break
				}
				rq := l.next(i)
				t0 := time.Now()
				body, err := l.do(ctx, rq)
				d := time.Since(t0)
				if err == nil && l.check != nil {
					err = l.check(i, body)
				}
				if err != nil {
					errs++
					if firstErr == nil {
						firstErr = fmt.Errorf("%s %s: %w", rq.method, rq.path, err)
					}
					continue
				}
				mine = append(mine, d)
			}
			mu.Lock()
			res.latencies = append(res.latencies, mine...)
			res.errors += errs
			if res.firstErr == nil {
				res.firstErr = firstErr
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(started)
	slices.Sort(res.latencies)
	return res
}

func (l load) do(ctx context.Context, rq request) ([]byte, error) {
	var body io.Reader
	if rq.body != nil {
		body = bytes.NewReader(rq.body)
	}
	req, err := http.NewRequestWithContext(ctx, rq.method, l.base+rq.path, body)
	if err != nil {
		return nil, err
	}
	if l.key != "" {
		req.Header.Set("Authorization", "Bearer "+l.key)
	}
	if l.cookie != "" {
		req.Header.Set("Cookie", l.cookie)
	}
	if rq.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := l.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != rq.want {
		return nil, fmt.Errorf("status %d, want %d: %.200s", resp.StatusCode, rq.want, b)
	}
	return b, nil
}
