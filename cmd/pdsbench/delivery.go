package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pds-dev/pds/internal/clock"
	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/webhook"
	"github.com/pds-dev/pds/pkg/webhookverify"
)

// The delivery rows measure the webhook pipeline on a fresh database of
// each engine, with the real worker (webhook.Worker, as pds serve runs it,
// at its default settings) delivering to HTTPS receivers on loopback:
//
//   - throughput: deliveries per second of 20,000 created persons with one
//     subscription, against a bare loop POSTing as many signed bodies with
//     8 workers to the same receiver;
//   - isolation: account B's receiver answers after 14 s (or accepts the
//     connection and never answers); B changes 50 persons, then account A
//     (a receiver answering at once) changes 50; the seconds from A's last
//     write until all 50 of A's deliveries arrived.

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
	st, err := open(ctx, database)
	if err != nil {
		return nil, nil, err
	}
	defer st.Close()
	logf := progress(engine + " delivery")
	d := &deliveryBench{ctx: ctx, st: st, engine: engine, logf: logf}
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
	st       store.Store
	engine   string
	logf     func(string, ...any)
	rows     []row
	failures []string
}

func (d *deliveryBench) fail(format string, a ...any) {
	d.failures = append(d.failures, d.engine+": "+fmt.Sprintf(format, a...))
}

// counter is an HTTPS receiver that counts what it got and when.
type counter struct {
	srv         *httptest.Server
	n           atomic.Int64
	want        int64
	mu          sync.Mutex
	first, last time.Time
	done        chan struct{}
	delay       time.Duration
	quit        chan struct{}
}

func newCounter(want int, delay time.Duration) *counter {
	c := &counter{want: int64(want), done: make(chan struct{}), delay: delay, quit: make(chan struct{})}
	c.srv = httptest.NewUnstartedServer(http.HandlerFunc(c.serve))
	c.srv.EnableHTTP2 = true
	c.srv.StartTLS()
	return c
}

func (c *counter) serve(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	if c.delay > 0 {
		select {
		case <-time.After(c.delay):
		case <-r.Context().Done():
			return
		case <-c.quit:
			return
		}
	}
	if r.Header.Get(webhookverify.HeaderSignature) == "" {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	now := time.Now()
	c.mu.Lock()
	if c.first.IsZero() {
		c.first = now
	}
	c.last = now
	if c.n.Add(1) == c.want {
		close(c.done)
	}
	c.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (c *counter) reset(want int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n.Store(0)
	c.want = int64(want)
	c.first, c.last = time.Time{}, time.Time{}
	c.done = make(chan struct{})
}

func (c *counter) finished() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.done
}

func (c *counter) span() (time.Time, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.first, c.last
}

func (c *counter) close() {
	close(c.quit)
	c.srv.Close()
}

func (c *counter) url() string { return c.srv.URL + "/hooks/pds" }

// blackHole accepts connections and never answers on them.
type blackHole struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newBlackHole() (*blackHole, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b := &blackHole{ln: ln}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			b.mu.Lock()
			b.conns = append(b.conns, conn)
			b.mu.Unlock()
		}
	}()
	return b, nil
}

func (b *blackHole) close() {
	b.ln.Close()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.conns {
		c.Close()
	}
}

// settings are the worker's: defaults, with loopback allowed and the
// receivers' certificate trusted (httptest serves one certificate).
func workerSettings(cert *x509.Certificate) webhook.Settings {
	return webhook.Settings{AllowPrivate: true, ExtraCAs: []*x509.Certificate{cert}}
}

// startWorker runs a worker until the returned stop is called.
func (d *deliveryBench) startWorker(s webhook.Settings) (func(), error) {
	w, err := webhook.NewWorker(d.st, webhook.PersonRenderer{Persons: d.st, PublicURL: "http://127.0.0.1"}, clock.System{}, s,
		slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(d.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx)
	}()
	return func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			d.logf("the worker still had attempts in flight 30 s after it was stopped")
		}
	}, nil
}

func (d *deliveryBench) account(name string) (string, error) {
	id := domain.NewID("acc")
	return id, d.st.CreateAccount(d.ctx, domain.Account{ID: id, Name: name, CreatedAt: time.Now().UTC()})
}

func (d *deliveryBench) subscribe(account, url string) (domain.Webhook, error) {
	now := time.Now().UTC()
	w := domain.Webhook{ID: domain.NewID("wh"), AccountID: account, Name: "pdsbench", TargetURL: url,
		Events: []string{domain.EventPersonCreated, domain.EventPersonUpdated}, IsActive: true,
		Secret: webhook.NewSecret(), SecretVersion: 1, CreatedAt: now}
	return w, d.st.CreateWebhook(d.ctx, w)
}

// throughput: the worker against a bare POST loop, on one receiver.
func (d *deliveryBench) throughput() {
	const name = "8. Webhook deliveries/s ÷ bare POST loop (8 workers)"
	rc := newCounter(deliveryPersons, 0)
	defer rc.close()
	cert := rc.srv.Certificate()

	// The bare loop: the same receiver, signed bodies of a real delivery's
	// size, 8 workers with keep-alive connections, over HTTP/1.1 and over
	// HTTP/2: the faster is the ceiling, so that the ratio cannot flatter
	// the worker by its choice of protocol.
	var bare float64
	var bares []string
	for _, h2 := range []bool{false, true} {
		d.logf("bare loop: %d signed POSTs, %d workers, HTTP/2 %v", deliveryPersons, bareLoopWorkers, h2)
		rate, err := bareLoop(d.ctx, rc, cert, h2)
		if err != nil {
			d.fail("%s: bare loop: %v", name, err)
			return
		}
		bare = max(bare, rate)
		bares = append(bares, fmt.Sprintf("%.0f/s over %s", rate, map[bool]string{false: "HTTP/1.1", true: "HTTP/2"}[h2]))
	}

	acc, err := d.account("throughput")
	if err == nil {
		_, err = d.subscribe(acc, rc.url())
	}
	if err != nil {
		d.fail("%s: %v", name, err)
		return
	}
	d.logf("creating %d persons (import, window %s)", deliveryPersons, deliveryWindow)
	if _, err := d.st.ImportPersons(d.ctx, acc, personLinesFor(deliveryPersons), store.Write{Now: time.Now().UTC(), Window: deliveryWindow}); err != nil {
		d.fail("%s: import: %v", name, err)
		return
	}
	time.Sleep(deliveryWindow) // every burst due
	rc.reset(deliveryPersons)
	d.logf("delivering")
	start := time.Now()
	stop, err := d.startWorker(workerSettings(cert))
	if err != nil {
		d.fail("%s: %v", name, err)
		return
	}
	select {
	case <-rc.finished():
	case <-time.After(10 * time.Minute):
	case <-d.ctx.Done():
	}
	stop()
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
		note: fmt.Sprintf("%d persons, window %s; from the worker's start (every burst due) to the last delivery %s; first to last delivery %.0f/s (ratio %.2f); the bare loop %s",
			deliveryPersons, deliveryWindow, last.Sub(start).Round(time.Millisecond), firstToLast, firstToLast/bare, strings.Join(bares, ", "))})
}

// bareLoop POSTs deliveryPersons signed bodies to rc with 8 workers, over
// HTTP/2 or HTTP/1.1 (a connection per worker), and returns the rate.
func bareLoop(ctx context.Context, rc *counter, cert *x509.Certificate, h2 bool) (float64, error) {
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	transport := &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: h2,
		MaxIdleConns: bareLoopWorkers, MaxIdleConnsPerHost: bareLoopWorkers,
	}
	if !h2 {
		transport.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	client := &http.Client{Transport: transport, Timeout: 15 * time.Second}
	defer client.CloseIdleConnections()
	secret := webhook.NewSecret()
	data := []byte(`{"id":"per_0123456789abcdef","external_id":"ext-1","email":"p1@bench.example","first_name":"First 1","last_name":"Last","name":"First 1 Last","phone":"+15550000001","language":null,"pseudonym":null,"occupation":null,"age":null,"ethnicity":null,"income":null,"edu":null,"companies":[],"address":{},"tags":[],"tag_ids":[],"email_opt_out":false,"is_archived":false,"upsert_result":"created","0_person_url":"http://127.0.0.1/persons/per_0123456789abcdef","custom_fields":{},"custom_data":{}}`)
	rc.reset(deliveryPersons)
	var next atomic.Int64
	var firstErr error
	var errMu sync.Mutex
	start := time.Now()
	var wg sync.WaitGroup
	for range bareLoopWorkers {
		wg.Go(func() {
			for next.Add(1) <= deliveryPersons && ctx.Err() == nil {
				id := webhook.NewDeliveryID()
				body, _ := webhook.Body(id, domain.EventPersonCreated, time.Now(), data)
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, rc.url(), bytes.NewReader(body))
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
	took := time.Since(start)
	if firstErr != nil {
		return 0, firstErr
	}
	if n := rc.n.Load(); n != deliveryPersons {
		return 0, fmt.Errorf("the receiver counted %d of %d", n, deliveryPersons)
	}
	return float64(deliveryPersons) / took.Seconds(), nil
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
	name := "9. Webhook isolation: A's 50 deliveries after B's 50 to a receiver answering in 14 s"
	if hole {
		name = "9. Webhook isolation: A's 50 deliveries after B's 50 to a receiver that never answers"
	}
	d.logf("%s", name)
	fast := newCounter(isolationPersons, 0)
	defer fast.close()
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
	accA, err := d.account("A")
	var accB string
	if err == nil {
		accB, err = d.account("B")
	}
	var subB domain.Webhook
	if err == nil {
		_, err = d.subscribe(accA, fast.url())
	}
	if err == nil {
		subB, err = d.subscribe(accB, bURL)
	}
	if err != nil {
		d.fail("%s: %v", name, err)
		return
	}
	stop, err := d.startWorker(workerSettings(fast.srv.Certificate()))
	if err != nil {
		d.fail("%s: %v", name, err)
		return
	}
	defer func() {
		// B's deliveries stop with its subscription.
		off := false
		_, _ = d.st.UpdateWebhook(context.Background(), accB, subB.ID, domain.WebhookUpdate{IsActive: &off}, time.Now().UTC())
	}()
	defer stop()
	write := func(acc string, i int) error {
		_, _, err := d.st.UpsertPerson(d.ctx, acc, domain.PersonUpsert{
			ExternalID: domain.Opt[string]{Set: true, Value: fmt.Sprintf("iso-%d", i)},
			FirstName:  domain.Opt[string]{Set: true, Value: "Iso"},
		}, store.Write{Now: time.Now().UTC(), Window: deliveryWindow})
		return err
	}
	for i := range isolationPersons {
		if err := write(accB, i); err != nil {
			d.fail("%s: %v", name, err)
			return
		}
	}
	for i := range isolationPersons {
		if err := write(accA, i); err != nil {
			d.fail("%s: %v", name, err)
			return
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
		note:       fmt.Sprintf("from A's last write to A's 50th delivery; window %s, attempt timeout 15 s", deliveryWindow)})
}
