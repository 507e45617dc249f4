package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/webhook"
)

// The delivery rows measure the webhook pipeline on a fresh database of
// each engine, with pds serve's worker at its default settings delivering
// to HTTPS receivers on loopback (--webhook-allow-private and
// --webhook-ca-file, as the README has a developer start one for a local
// receiver; a window of a second), a pds serve of its own per scenario:
//
//   - throughput: deliveries per second of 20,000 created persons with one
//     subscription, against a bare loop POSTing as many signed bodies with
//     8 workers to the same receiver, in a process of its own (ceiling.go);
//   - isolation: account B's receiver answers after 14 s (or accepts the
//     connection and never answers); B changes 50 persons, then account A
//     (a receiver answering at once) changes 50, through the API; the
//     seconds from A's last write until all 50 of A's deliveries arrived.
//
// Accounts, keys, subscriptions and the throughput's persons are set up
// through a store opened while no server runs, or closed before it does.

const (
	deliveryPersons  = 20_000
	deliveryWindow   = time.Second // the coalescing window, as a server setting
	bareLoopWorkers  = 8
	isolationPersons = 50
	slowAnswer       = 14 * time.Second
	isolationLimit   = 5 * time.Minute // a scenario that takes longer fails
)

func benchDelivery(ctx context.Context, c config, engine, dir string) ([]row, []string, error) {
	database, drop, err := freshDatabase(ctx, engine, dir, c.pgURL, false)
	if err != nil {
		return nil, nil, err
	}
	defer drop()
	d := &deliveryBench{ctx: ctx, c: c, engine: engine, database: database, dir: dir, logf: progress(engine + " delivery")}
	d.throughput()
	for _, blackHole := range []bool{false, true} {
		if ctx.Err() != nil {
			break
		}
		d.isolation(blackHole)
	}
	return d.rows, d.failures, ctx.Err()
}

type deliveryBench struct {
	ctx      context.Context
	c        config
	engine   string
	database string
	dir      string
	logf     func(string, ...any)
	rows     []row
	failures []string
}

func (d *deliveryBench) fail(format string, a ...any) {
	d.failures = append(d.failures, d.engine+": "+fmt.Sprintf(format, a...))
}

// setup runs f on a store of the database, closed after it.
func (d *deliveryBench) setup(f func(store.Store) error) error {
	st, err := open(d.ctx, d.database)
	if err != nil {
		return err
	}
	return errors.Join(f(st), st.Close())
}

// serve starts the scenario's pds serve, trusting the receivers'
// certificate (caFile).
func (d *deliveryBench) serve(name, caFile string) (*process, error) {
	srv, err := startPDS(d.c, name, d.dir, d.database,
		"--webhook-allow-private", "--webhook-ca-file", caFile, "--webhook-window", deliveryWindow.String())
	if err != nil {
		return nil, err
	}
	if err := srv.profileRows(d.c, d.engine, name); err != nil {
		d.fail("%v", err)
	}
	return srv, nil
}

// stop stops a scenario's server, failing the run if it did not stop
// cleanly.
func (d *deliveryBench) stop(srv *process) {
	if err := srv.stop(); err != nil {
		d.fail("%v", err)
	}
}

func subscribe(ctx context.Context, st store.Store, account, url string) (domain.Webhook, error) {
	now := time.Now().UTC()
	w := domain.Webhook{ID: domain.NewID("wh"), AccountID: account, Name: "pdsbench", TargetURL: url,
		Events: []string{domain.EventPersonCreated, domain.EventPersonUpdated}, IsActive: true,
		Secret: webhook.NewSecret(), SecretVersion: 1, CreatedAt: now}
	return w, st.CreateWebhook(ctx, w)
}

// throughput: the worker against a bare POST loop, on one receiver.
func (d *deliveryBench) throughput() {
	const name = "8. Webhook deliveries/s ÷ bare POST loop (8 workers)"
	rc := newCounter(deliveryPersons, 0)
	defer rc.close()
	caFile := filepath.Join(d.dir, "receivers-ca.pem")
	if err := writeCA(caFile, rc.srv.Certificate()); err != nil {
		d.fail("%s: %v", name, err)
		return
	}

	// The bare loop: the same receiver, signed bodies of a real delivery's
	// size, 8 workers with keep-alive connections, over HTTP/1.1 and over
	// HTTP/2: the faster is the ceiling, so that the ratio cannot flatter
	// the worker by its choice of protocol.
	var bare float64
	var bares []string
	for _, h2 := range []bool{false, true} {
		d.logf("bare loop: %d signed POSTs, %d workers, HTTP/2 %v", deliveryPersons, bareLoopWorkers, h2)
		rate, err := d.bareLoop(rc, caFile, h2)
		if err != nil {
			d.fail("%s: bare loop: %v", name, err)
			return
		}
		bare = max(bare, rate)
		bares = append(bares, fmt.Sprintf("%.0f/s over %s", rate, map[bool]string{false: "HTTP/1.1", true: "HTTP/2"}[h2]))
	}

	d.logf("creating %d persons (import, window %s)", deliveryPersons, deliveryWindow)
	err := d.setup(func(st store.Store) error {
		acc, _, err := accountWithKey(d.ctx, st, "throughput")
		if err == nil {
			_, err = subscribe(d.ctx, st, acc, rc.url())
		}
		if err == nil {
			_, err = st.ImportPersons(d.ctx, acc, personLinesFor(deliveryPersons), store.Write{Now: time.Now().UTC(), Window: deliveryWindow})
		}
		return err
	})
	if err != nil {
		d.fail("%s: %v", name, err)
		return
	}
	time.Sleep(deliveryWindow) // every burst due
	rc.reset(deliveryPersons)
	d.logf("delivering")
	start := time.Now()
	srv, err := d.serve("pds-serve-throughput", caFile)
	if err != nil {
		d.fail("%s: %v", name, err)
		return
	}
	select {
	case <-rc.finished():
	case <-time.After(10 * time.Minute):
	case <-d.ctx.Done():
	}
	d.stop(srv)
	got := rc.n.Load()
	first, last := rc.span()
	if got < deliveryPersons {
		d.fail("%s: %d of %d deliveries arrived", name, got, deliveryPersons)
		return
	}
	endToEnd := float64(deliveryPersons) / last.Sub(start).Seconds()
	firstToLast := float64(deliveryPersons) / last.Sub(first).Seconds()
	d.rows = append(d.rows, row{engine: d.engine, name: name,
		throughput: fmt.Sprintf("%.0f/s ÷ %.0f/s = %.2f", endToEnd, bare, endToEnd/bare),
		note: fmt.Sprintf("%d persons, window %s; from pds serve's start (every burst due) to the last delivery %s; first to last delivery %.0f/s (ratio %.2f); the bare loop, a process of its own, %s",
			deliveryPersons, deliveryWindow, last.Sub(start).Round(time.Millisecond), firstToLast, firstToLast/bare, strings.Join(bares, ", "))})
}

// bareLoop runs the bare signed-POST loop (signedPosts) to rc in a process
// of its own and returns its rate, once the receiver counted every POST.
func (d *deliveryBench) bareLoop(rc *counter, caFile string, h2 bool) (float64, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	rc.reset(deliveryPersons)
	args := []string{"ceiling", "signed-posts", "--url", rc.url(), "--ca-file", caFile,
		"--count", strconv.Itoa(deliveryPersons), "--workers", strconv.Itoa(bareLoopWorkers), "--http2=" + strconv.FormatBool(h2)}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(d.ctx, self, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("%w: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	took, err := signedPostsResult(out)
	if err != nil {
		return 0, err
	}
	if n := rc.n.Load(); n != deliveryPersons {
		return 0, fmt.Errorf("the receiver counted %d of %d", n, deliveryPersons)
	}
	return float64(deliveryPersons) / took.Seconds(), nil
}

// signedPosts POSTs count signed bodies to url with workers at once, over
// HTTP/2 or HTTP/1.1 (a connection per worker), trusting the certificate
// of caFile, and returns the time it took: the bare loop, which pdsbench
// ceiling signed-posts runs.
func signedPosts(ctx context.Context, url, caFile string, count, workers int, h2 bool) (time.Duration, error) {
	pemCert, err := os.ReadFile(caFile)
	if err != nil {
		return 0, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pemCert) {
		return 0, fmt.Errorf("no certificate in %s", caFile)
	}
	transport := &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: h2,
		MaxIdleConns: workers, MaxIdleConnsPerHost: workers,
	}
	if !h2 {
		transport.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	client := &http.Client{Transport: transport, Timeout: 15 * time.Second}
	defer client.CloseIdleConnections()
	secret := webhook.NewSecret()
	data := []byte(`{"id":"per_0123456789abcdef","external_id":"ext-1","email":"p1@bench.example","first_name":"First 1","last_name":"Last","name":"First 1 Last","phone":"+15550000001","language":null,"pseudonym":null,"occupation":null,"age":null,"ethnicity":null,"income":null,"edu":null,"companies":[],"address":{},"tags":[],"tag_ids":[],"email_opt_out":false,"is_archived":false,"upsert_result":"created","0_person_url":"http://127.0.0.1/persons/per_0123456789abcdef","custom_fields":{},"custom_data":{}}`)
	var next atomic.Int64
	var firstErr error
	var errMu sync.Mutex
	start := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for next.Add(1) <= int64(count) && ctx.Err() == nil {
				id := webhook.NewDeliveryID()
				body, _ := webhook.Body(id, domain.EventPersonCreated, time.Now(), data)
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
				webhook.SetHeaders(req.Header, domain.Delivery{ID: id, WebhookID: "wh_bench", Event: domain.EventPersonCreated, Body: body}, secret, time.Now())
				res, err := client.Do(req)
				if err == nil {
					_, _ = io.Copy(io.Discard, res.Body)
					res.Body.Close()
				}
				if err != nil {
					errMu.Lock()
					firstErr = cmpErr(firstErr, err)
					errMu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return time.Since(start), firstErr
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// personLinesFor is n import lines of new persons.
func personLinesFor(n int) iter.Seq2[store.PersonImport, error] {
	return func(yield func(store.PersonImport, error) bool) {
		for i := range n {
			p := domain.PersonUpsert{
				ExternalID: domain.Opt[string]{Set: true, Value: seedExternalID(i)},
				Email:      domain.Opt[string]{Set: true, Value: seedEmail(i)},
				FirstName:  domain.Opt[string]{Set: true, Value: fmt.Sprintf("First %d", i)},
			}
			if !yield(store.PersonImport{Line: i + 1, Person: p}, nil) {
				return
			}
		}
	}
}

// isolation: the slow (or black-holed) account B next to account A.
func (d *deliveryBench) isolation(hole bool) {
	name, label := "9. Webhook isolation: A's 50 deliveries after B's 50 to a receiver answering in 14 s", "pds-serve-isolation-slow"
	if hole {
		name, label = "9. Webhook isolation: A's 50 deliveries after B's 50 to a receiver that never answers", "pds-serve-isolation-black-hole"
	}
	d.logf("%s", name)
	fast := newCounter(isolationPersons, 0)
	defer fast.close()
	caFile := filepath.Join(d.dir, "receivers-ca.pem")
	if err := writeCA(caFile, fast.srv.Certificate()); err != nil {
		d.fail("%s: %v", name, err)
		return
	}
	var bURL string
	if hole {
		bh, err := newBlackHole()
		if err != nil {
			d.fail("%s: %v", name, err)
			return
		}
		defer bh.close()
		bURL = "https://" + bh.ln.Addr().String() + "/hooks/pds"
	} else {
		slow := newCounter(isolationPersons, slowAnswer)
		defer slow.close()
		bURL = slow.url()
	}
	var keyA, keyB, accB string
	var subB domain.Webhook
	err := d.setup(func(st store.Store) error {
		accA, key, err := accountWithKey(d.ctx, st, "A")
		if err != nil {
			return err
		}
		keyA = key
		if accB, keyB, err = accountWithKey(d.ctx, st, "B"); err != nil {
			return err
		}
		if _, err = subscribe(d.ctx, st, accA, fast.url()); err != nil {
			return err
		}
		subB, err = subscribe(d.ctx, st, accB, bURL)
		return err
	})
	if err != nil {
		d.fail("%s: %v", name, err)
		return
	}
	srv, err := d.serve(label, caFile)
	if err != nil {
		d.fail("%s: %v", name, err)
		return
	}
	defer func() {
		d.stop(srv)
		// B's deliveries stop with its subscription, before the next
		// scenario's server starts.
		off := false
		err := d.setup(func(st store.Store) error {
			_, err := st.UpdateWebhook(context.Background(), accB, subB.ID, domain.WebhookUpdate{IsActive: &off}, time.Now().UTC())
			return err
		})
		if err != nil {
			d.fail("%s: deactivating B's subscription: %v", name, err)
		}
	}()
	write := func(key string, i int) error {
		_, err := load{client: newClient(1), base: srv.base, key: key}.do(d.ctx, request{method: http.MethodPost, path: "/persons",
			want: http.StatusCreated, body: fmt.Appendf(nil, `{"external_id":"iso-%d","first_name":"Iso"}`, i)})
		return err
	}
	for _, key := range []string{keyB, keyA} {
		for i := range isolationPersons {
			if err := write(key, i); err != nil {
				d.fail("%s: %v", name, err)
				return
			}
		}
	}
	lastWrite := time.Now()
	select {
	case <-fast.finished():
	case <-time.After(isolationLimit):
	case <-d.ctx.Done():
	}
	if n := fast.n.Load(); n < isolationPersons {
		d.fail("%s: %d of A's %d deliveries within %s", name, n, isolationPersons, isolationLimit)
		d.rows = append(d.rows, row{engine: d.engine, name: name, throughput: fmt.Sprintf("> %s", isolationLimit)})
		return
	}
	_, last := fast.span()
	d.rows = append(d.rows, row{engine: d.engine, name: name,
		throughput: fmt.Sprintf("%.1f s", last.Sub(lastWrite).Seconds()),
		note:       fmt.Sprintf("from A's last write (POST /persons) to A's 50th delivery; window %s, attempt timeout 15 s", deliveryWindow)})
}
