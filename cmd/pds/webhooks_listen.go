package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/webhook"
	"github.com/pds-dev/pds/pkg/webhookverify"
)

const listenHelp = `Usage: pds webhooks listen --account ID [--events E,E] [--signature-scheme S] [--print-body] [--forward-to URL] [--port N]

Receives one account's webhook deliveries on this machine for as long as it
runs, for developing a receiver. It starts a plain-HTTP receiver on 127.0.0.1,
subscribes it to the events (a subscription named "pds webhooks listen (host,
pid)" whose target is http://127.0.0.1:PORT/), verifies every delivery with
the subscription's secret (pkg/webhookverify) in its signature scheme (pds,
or standard-webhooks: the Standard Webhooks headers, as that specification's
libraries verify them) and prints one line per delivery:
time, event, person id, delivery id, attempt; --print-body prints the body
instead. Deliveries come from the pds serve instances on this machine that use
the same database; they need no --webhook-allow-private, and no other
subscription may reach loopback.

--forward-to URL passes each verified delivery on, its body and headers
unchanged, prints the status it got, and answers pds with that status, so that
retries follow your receiver: a 410 is answered 400 (the listener's
subscription is not retired) and no answer at all 502 (retried). A delivery
whose signature does not verify is answered 400 and not passed on.

Ctrl-C (or SIGTERM) removes the subscription. After a hard kill it stays:
the next pds webhooks listen for the account removes the listeners' subscriptions
on this machine whose receiver no longer answers, or delete it with
DELETE /webhooks/{id}.

Flags:
`

// maxListenBody bounds a delivery the listener reads.
const maxListenBody = 16 << 20

func (e cmdEnv) webhooksListen(fs *pflag.FlagSet) func([]string) error {
	c := commonFlagsOn(fs)
	account := fs.String("account", "", "account id (required)")
	events := fs.String("events", strings.Join(domain.WebhookEvents, ","), "comma-separated events to subscribe to")
	scheme := fs.String("signature-scheme", domain.SchemePDS, "how deliveries are signed and verified: pds or standard-webhooks")
	printBody := fs.Bool("print-body", false, "print each delivery's body instead of its one-line summary")
	forwardTo := fs.String("forward-to", "", "pass each verified delivery on to this URL, headers unchanged, and answer pds with its status")
	port := fs.Int("port", 0, "port of the receiver on 127.0.0.1 (0: any free port)")
	fs.Lookup("json").Usage = "machine-readable output: one JSON object per line (the start, each delivery, the stop)"
	return func([]string) error {
		if *account == "" {
			return usageError{errors.New("webhooks listen: --account is required; e.g. --account acc_01a209d69f8a9aba61380d0e (pds accounts list)")}
		}
		evs, err := parseEvents(*events)
		if err != nil {
			return badSetting("events", *events, err.Error())
		}
		if !slices.Contains(domain.SignatureSchemes, *scheme) {
			return badSetting("signature-scheme", *scheme, "not pds or standard-webhooks")
		}
		if *forwardTo != "" {
			if u, err := url.Parse(*forwardTo); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return badSetting("forward-to", *forwardTo, "not an absolute http or https URL")
			}
		}
		if *port < 0 || *port > 65535 {
			return badSetting("port", strconv.Itoa(*port), "not a port (0 to 65535)")
		}
		if err := checkDatabase(c.database); err != nil {
			return err
		}
		// Bound first: a taken port leaves no subscription behind.
		ln, err := listen("port", strconv.Itoa(*port), net.JoinHostPort("127.0.0.1", strconv.Itoa(*port)))
		if err != nil {
			return err
		}
		defer ln.Close()

		st, err := openAccountStore(e.ctx, c, "webhooks listen", *account)
		if err != nil {
			return err
		}
		defer st.Close()
		host := webhook.HostName()
		stale, err := removeStaleListeners(e.ctx, st, *account, host)
		if err != nil {
			return err
		}
		now := time.Now().UTC()
		sub := domain.Webhook{
			ID: domain.NewID("wh"), AccountID: *account, Name: listenerName(host, os.Getpid()),
			TargetURL: "http://" + ln.Addr().String() + "/", Events: evs, IsActive: true,
			Secret: webhook.NewSecret(), SecretVersion: 1, SignatureScheme: *scheme, CreatedAt: now, UpdatedAt: now,
			LocalListener: true, ListenerHost: host,
		}
		if err := st.CreateWebhook(e.ctx, sub); err != nil {
			return err
		}
		l := &listener{out: e.stdout, secret: sub.Secret, scheme: sub.SignatureScheme, printBody: *printBody, asJSON: c.json, forwardTo: *forwardTo,
			attempts: map[string]int{}}
		if *forwardTo != "" {
			l.client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		}
		l.started(sub, stale)

		srv := &http.Server{Handler: l, ReadHeaderTimeout: 10 * time.Second}
		errc := make(chan error, 1)
		go func() { errc <- srv.Serve(ln) }()
		var serveErr error
		select {
		case <-e.ctx.Done():
		case serveErr = <-errc:
		}
		// The subscription goes first, so that nothing more is sent to a
		// receiver that is closing; attempts in flight finish.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		delErr := st.DeleteWebhook(ctx, *account, sub.ID)
		if errors.Is(delErr, domain.ErrNotFound) {
			delErr = nil // deleted through the API meanwhile
		}
		shutdown, cancelShutdown := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancelShutdown()
		_ = srv.Shutdown(shutdown)
		if delErr != nil {
			return fmt.Errorf("could not remove subscription %s (remove it with DELETE /webhooks/%s, or the next pds webhooks listen does): %w",
				sub.ID, sub.ID, delErr)
		}
		l.stopped(sub)
		if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
			return serveErr
		}
		return nil
	}
}

// parseEvents reads --events: known events, each once, at least one.
func parseEvents(s string) ([]string, error) {
	var out []string
	for _, ev := range strings.Split(s, ",") {
		ev = strings.TrimSpace(ev)
		switch {
		case !slices.Contains(domain.WebhookEvents, ev):
			return nil, fmt.Errorf("%q is not an event; the events are %s.%s", ev, domain.Choices(domain.WebhookEvents), domain.DidYouMean(ev, domain.WebhookEvents))
		case slices.Contains(out, ev):
			return nil, fmt.Errorf("%s is listed twice", ev)
		}
		out = append(out, ev)
	}
	return out, nil
}

// listenerName names a listener's subscription after where it runs.
func listenerName(host string, pid int) string {
	if len(host) > 200 {
		host = host[:200]
	}
	return fmt.Sprintf("pds webhooks listen (%s, %d)", host, pid)
}

// removeStaleListeners deletes the account's local listeners on this host
// whose receiver refuses connections: a pds webhooks listen that was killed
// before it could remove its subscription. A receiver that answers, or
// whose state cannot be told, is left alone.
func removeStaleListeners(ctx context.Context, st store.Store, account, host string) ([]domain.Webhook, error) {
	var stale []domain.Webhook
	const size = 100
	for page := 1; ; page++ {
		ws, total, err := st.ListWebhooks(ctx, account, domain.PageRequest{Page: page, Size: size})
		if err != nil {
			return nil, err
		}
		for _, w := range ws {
			if w.LocalListener && w.ListenerHost == host && !receiverAnswers(w.TargetURL) {
				stale = append(stale, w)
			}
		}
		if len(ws) < size || page*size >= total {
			break
		}
	}
	for _, w := range stale {
		if err := st.DeleteWebhook(ctx, account, w.ID); err != nil && !errors.Is(err, domain.ErrNotFound) {
			return nil, err
		}
	}
	return stale, nil
}

// receiverAnswers reports whether a listener's receiver still accepts
// connections; only a refused connection counts as gone.
func receiverAnswers(target string) bool {
	u, err := url.Parse(target)
	if err != nil || !webhook.IsLoopbackHost(u.Hostname()) || u.Port() == "" {
		return true
	}
	c, err := net.DialTimeout("tcp", u.Host, 2*time.Second)
	if err != nil {
		return !errors.Is(err, syscall.ECONNREFUSED)
	}
	c.Close()
	return true
}

// listener is the receiver of pds webhooks listen.
type listener struct {
	out       io.Writer
	secret    string
	scheme    string
	printBody bool
	asJSON    bool
	forwardTo string
	client    *http.Client

	mu       sync.Mutex // the output and attempts
	attempts map[string]int
}

// maxRemembered bounds the deliveries whose attempts are counted.
const maxRemembered = 10000

// received is what one delivery printed.
type received struct {
	Time          string          `json:"time"`
	Event         string          `json:"event,omitempty"`
	PersonID      string          `json:"person_id,omitempty"`
	DeliveryID    string          `json:"delivery_id,omitempty"`
	Attempt       int             `json:"attempt,omitempty"`
	Invalid       string          `json:"invalid_signature,omitempty"`
	ForwardStatus int             `json:"forward_status,omitempty"`
	ForwardError  string          `json:"forward_error,omitempty"`
	Answered      int             `json:"answered"`
	Body          json.RawMessage `json:"body,omitempty"`
}

func (l *listener) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "pds webhooks listen receives POSTed deliveries", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxListenBody))
	if err != nil {
		http.Error(w, "cannot read the body", http.StatusBadRequest)
		return
	}
	rec := received{Time: time.Now().Format(time.RFC3339)}
	if err := l.verify(r.Header, body); err != nil {
		rec.DeliveryID, rec.Invalid, rec.Answered = r.Header.Get(webhookverify.HeaderDeliveryID), err.Error(), http.StatusBadRequest
		l.print(rec)
		http.Error(w, "the signature does not verify", http.StatusBadRequest)
		return
	}
	// Signed, so what the body says is what pds sent.
	var env struct {
		ID    string `json:"id"`
		Event string `json:"event"`
		Data  struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	_ = json.Unmarshal(body, &env)
	rec.Event, rec.PersonID, rec.DeliveryID = env.Event, env.Data.ID, env.ID
	rec.Attempt = l.attempt(env.ID)
	rec.Answered = http.StatusOK
	if l.printBody {
		rec.Body = body
	}
	if l.forwardTo != "" {
		code, err := l.forward(r, body)
		rec.ForwardStatus, rec.Answered = code, answerFor(code, err)
		if err != nil {
			rec.ForwardError = err.Error()
		}
	}
	l.print(rec)
	w.WriteHeader(rec.Answered)
}

// verify checks a delivery in the listener's scheme: under
// standard-webhooks by those headers alone, as that specification's
// libraries do, whatever else it carries.
func (l *listener) verify(h http.Header, body []byte) error {
	if l.scheme == domain.SchemeStandardWebhooks {
		return webhookverify.VerifyStandard(h, body, []string{l.secret}, time.Now(), webhookverify.Options{})
	}
	return webhookverify.Verify(h, body, []string{l.secret}, time.Now(), webhookverify.Options{})
}

// attempt counts the deliveries of this id received so far; every attempt
// of a delivery is sent to this listener, whose subscription it is.
func (l *listener) attempt(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.attempts) >= maxRemembered {
		clear(l.attempts)
	}
	l.attempts[id]++
	return l.attempts[id]
}

// hopByHop are the headers that concern one connection, not the delivery.
var hopByHop = []string{"Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Proxy-Connection",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// forward POSTs the delivery to --forward-to with its headers, within the
// attempt: when pds stops waiting, the forward stops too.
func (l *listener) forward(r *http.Request, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, l.forwardTo, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	for k, vs := range r.Header {
		if !slices.Contains(hopByHop, k) {
			req.Header[k] = slices.Clone(vs)
		}
	}
	res, err := l.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	return res.StatusCode, nil
}

// answerFor is what pds is answered after a forward: the receiver's status,
// so that pds retries as it would retry the receiver, except that a 410
// (which would retire the listener's subscription) is a 400 and no answer a
// 502.
func answerFor(code int, err error) int {
	switch {
	case err != nil || code < 200:
		return http.StatusBadGateway
	case code == http.StatusGone:
		return http.StatusBadRequest
	}
	return code
}

func (l *listener) print(rec received) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.asJSON {
		b, _ := json.Marshal(rec)
		fmt.Fprintf(l.out, "%s\n", b)
		return
	}
	if rec.Invalid != "" {
		id := ""
		if rec.DeliveryID != "" {
			id = " (Service-Delivery-Id " + rec.DeliveryID + ")"
		}
		fmt.Fprintf(l.out, "%s  INVALID SIGNATURE%s: %s; answered 400\n", rec.Time, id, rec.Invalid)
		return
	}
	forward := ""
	switch {
	case rec.ForwardError != "":
		forward = fmt.Sprintf("  -> %s (answered %d)", rec.ForwardError, rec.Answered)
	case rec.ForwardStatus != 0 && rec.ForwardStatus != rec.Answered:
		forward = fmt.Sprintf("  -> %d %s (answered %d)", rec.ForwardStatus, http.StatusText(rec.ForwardStatus), rec.Answered)
	case rec.ForwardStatus != 0:
		forward = fmt.Sprintf("  -> %d %s", rec.ForwardStatus, http.StatusText(rec.ForwardStatus))
	}
	if l.printBody {
		fmt.Fprintf(l.out, "%s\n", rec.Body)
		if forward != "" {
			fmt.Fprintf(l.out, "%s\n", strings.TrimSpace(forward))
		}
		return
	}
	fmt.Fprintf(l.out, "%s  %s  %s  delivery %s  attempt %d%s\n", rec.Time, rec.Event, rec.PersonID, rec.DeliveryID, rec.Attempt, forward)
}

func (l *listener) started(sub domain.Webhook, stale []domain.Webhook) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.asJSON {
		staleIDs := make([]string, len(stale))
		for i, w := range stale {
			staleIDs[i] = w.ID
		}
		b, _ := json.Marshal(map[string]any{"listening": true, "webhook_id": sub.ID, "account_id": sub.AccountID,
			"name": sub.Name, "events": sub.Events, "target_url": sub.TargetURL, "signature_scheme": sub.SignatureScheme,
			"forward_to": l.forwardTo, "removed_stale": staleIDs})
		fmt.Fprintf(l.out, "%s\n", b)
		return
	}
	for _, w := range stale {
		fmt.Fprintf(l.out, "Removed %s (%s): its receiver %s no longer answers.\n", w.ID, w.Name, w.TargetURL)
	}
	fmt.Fprintf(l.out, "Listening for %s on subscription %s (account %s, signed by %s) at %s; deliveries from a running pds serve on this database and machine.",
		strings.Join(sub.Events, ", "), sub.ID, sub.AccountID, sub.SignatureScheme, sub.TargetURL)
	if l.forwardTo != "" {
		fmt.Fprintf(l.out, " Forwarding to %s.", l.forwardTo)
	}
	fmt.Fprintln(l.out, " Ctrl-C to stop.")
}

func (l *listener) stopped(sub domain.Webhook) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.asJSON {
		b, _ := json.Marshal(map[string]any{"stopped": true, "webhook_id": sub.ID, "removed": true})
		fmt.Fprintf(l.out, "%s\n", b)
		return
	}
	fmt.Fprintf(l.out, "Stopped; removed subscription %s.\n", sub.ID)
}
