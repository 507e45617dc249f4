package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/clock"
	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/internal/webhook"
	"github.com/pds-dev/pds/internal/webhook/webhooktest"
	"github.com/pds-dev/pds/pkg/webhookverify"
)

const window = 5 * time.Minute

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// rig is one instance: a store, a worker and the clock they share.
type rig struct {
	t      testing.TB
	st     store.Store
	clock  *clock.Fake
	render *webhooktest.Renderer
	worker *webhook.Worker
	acc    string
}

func newRig(t testing.TB, st store.Store, clk *clock.Fake, s webhook.Settings) *rig {
	t.Helper()
	render := &webhooktest.Renderer{}
	w, err := webhook.NewWorker(st, render, clk, s, quiet)
	if err != nil {
		t.Fatal(err)
	}
	return &rig{t: t, st: st, clock: clk, render: render, worker: w}
}

func start(t *testing.T, eng testenv.Engine, s webhook.Settings) *rig {
	r := newRig(t, eng.NewStore(t), clock.NewFake(t0), s)
	r.acc = r.account()
	return r
}

func (r *rig) account() string {
	r.t.Helper()
	id := domain.NewID("acc")
	if err := r.st.CreateAccount(context.Background(), domain.Account{ID: id, Name: "t", CreatedAt: t0}); err != nil {
		r.t.Fatal(err)
	}
	return id
}

func (r *rig) subscribe(acc, url string, events ...string) domain.Webhook {
	r.t.Helper()
	w := domain.Webhook{ID: domain.NewID("wh"), AccountID: acc, Name: "t", TargetURL: url, Events: events,
		IsActive: true, Secret: webhook.NewSecret(), SecretVersion: 1, CreatedAt: r.clock.Now()}
	if err := r.st.CreateWebhook(context.Background(), w); err != nil {
		r.t.Fatal(err)
	}
	return w
}

// touch creates the person with this external id, or changes it when it
// exists, now, through the person write path (which records the change in
// the outbox), and returns its id.
func (r *rig) touch(acc, externalID string) string {
	r.t.Helper()
	p, _, err := r.st.UpsertPerson(context.Background(), acc, domain.PersonUpsert{
		ExternalID: domain.Opt[string]{Set: true, Value: externalID},
		FirstName:  domain.Opt[string]{Set: true, Value: domain.RandomHex(4)},
	}, store.Write{Now: r.clock.Now(), Window: window})
	if err != nil {
		r.t.Fatal(err)
	}
	return p.ID
}

func (r *rig) run() {
	r.t.Helper()
	if err := r.worker.RunOnce(context.Background()); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) advance(d time.Duration) {
	r.t.Helper()
	r.clock.Advance(d)
	r.run()
}

func (r *rig) deliveries(w domain.Webhook) []domain.Delivery {
	r.t.Helper()
	ds, _, err := r.st.ListDeliveries(context.Background(), w.AccountID, w.ID, domain.DeliveryFilter{}, domain.PageRequest{Page: 1, Size: 100})
	if err != nil {
		r.t.Fatal(err)
	}
	return ds
}

func (r *rig) webhook(w domain.Webhook) *domain.Webhook {
	r.t.Helper()
	got, err := r.st.GetWebhook(context.Background(), w.AccountID, w.ID)
	if err != nil {
		r.t.Fatal(err)
	}
	return got
}

type delivered struct {
	ID      string          `json:"id"`
	Event   string          `json:"event"`
	Created string          `json:"created"`
	Data    json.RawMessage `json:"data"`
}

func decode(t *testing.T, req webhooktest.Request) delivered {
	t.Helper()
	var d delivered
	if err := json.Unmarshal(req.Body, &d); err != nil {
		t.Fatalf("body %s: %v", req.Body, err)
	}
	return d
}

func wantRequests(t *testing.T, rc *webhooktest.Receiver, n int) []webhooktest.Request {
	t.Helper()
	got := rc.Requests()
	if len(got) != n {
		t.Fatalf("receiver got %d requests, want %d", len(got), n)
	}
	return got
}

var hex32 = regexp.MustCompile(`^[0-9a-f]{32}$`)

func TestBurstsBecomeSignedDeliveriesForExactlyMatchingSubscriptions(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		both, created, updated, foreign := webhooktest.NewReceiver(t), webhooktest.NewReceiver(t), webhooktest.NewReceiver(t), webhooktest.NewReceiver(t)
		r := start(t, eng, webhooktest.Settings(both, created, updated, foreign))
		subBoth := r.subscribe(r.acc, both.URL, "person.created", "person.updated")
		subCreated := r.subscribe(r.acc, created.URL, "person.created")
		r.subscribe(r.acc, updated.URL, "person.updated")
		r.subscribe(r.account(), foreign.URL, "person.created", "person.updated")

		// A creation and two edits inside the window: one burst, person.created.
		person := r.touch(r.acc, "new")
		r.clock.Advance(time.Minute)
		r.touch(r.acc, "new")
		r.clock.Advance(2 * time.Minute)
		r.touch(r.acc, "new")
		r.advance(window - time.Millisecond)
		wantRequests(t, both, 0)
		r.advance(time.Millisecond)
		closedAt := r.clock.Now()

		got := wantRequests(t, both, 1)[0]
		wantRequests(t, created, 1)
		wantRequests(t, updated, 0)
		wantRequests(t, foreign, 0)
		body := decode(t, got)
		if body.Event != "person.created" || !hex32.MatchString(body.ID) || body.Created != domain.T(closedAt).Format(domain.TimeLayout) {
			t.Fatalf("body %s", got.Body)
		}
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(got.Body, &keys); err != nil {
			t.Fatalf("body %s: %v", got.Body, err)
		}
		if len(keys) != 4 || !strings.Contains(string(body.Data), `"id":"`+person+`"`) {
			t.Fatalf("body keys %v / data %s", keys, body.Data)
		}
		h := got.Header
		if h.Get("Service-Webhook-Id") != subBoth.ID || h.Get("Service-Delivery-Id") != body.ID || h.Get("Service-Event") != "person.created" ||
			h.Get("Service-Timestamp") != strconv.FormatInt(closedAt.Unix(), 10) || h.Get("Content-Type") != "application/json" {
			t.Fatalf("headers %v", h)
		}
		if err := webhookverify.Verify(h, got.Body, []string{subBoth.Secret}, r.clock.Now(), webhookverify.Options{}); err != nil {
			t.Fatalf("the signature does not verify: %v", err)
		}
		if err := webhookverify.Verify(h, got.Body, []string{subBoth.Secret}, r.clock.Now().Add(301*time.Second), webhookverify.Options{}); err == nil {
			t.Fatal("the signature still verifies 301 s later")
		}
		if err := webhookverify.Verify(h, got.Body, []string{subCreated.Secret}, r.clock.Now(), webhookverify.Options{}); err == nil {
			t.Fatal("another subscription's secret verifies the delivery")
		}
		if other := decode(t, created.Requests()[0]); other.ID == body.ID {
			t.Fatal("two subscriptions got the same delivery id")
		}
		ds := r.deliveries(subBoth)
		if len(ds) != 1 || ds[0].Status != domain.DeliverySucceeded || ds[0].Attempts != 1 || *ds[0].LastStatusCode != 204 || ds[0].PersonID != person {
			t.Fatalf("delivery log %+v", ds)
		}

		// Edits to an existing person: one person.updated.
		r.clock.Advance(time.Hour)
		r.touch(r.acc, "new")
		r.advance(time.Minute)
		r.touch(r.acc, "new")
		r.advance(window)
		if b := decode(t, wantRequests(t, both, 2)[1]); b.Event != "person.updated" {
			t.Fatalf("second burst delivered as %s", b.Event)
		}
		wantRequests(t, created, 1)
		if b := decode(t, wantRequests(t, updated, 1)[0]); b.Event != "person.updated" {
			t.Fatalf("updated-only subscription got %s", b.Event)
		}
		wantRequests(t, foreign, 0)
		r.advance(24 * time.Hour)
		wantRequests(t, both, 2)
	})
}

func TestServerErrorsAndTimeoutsAreRetriedOnScheduleWithTheSameID(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rc := webhooktest.NewReceiver(t)
		rc.Respond(func(n int, req *http.Request) int {
			switch n {
			case 1:
				return http.StatusServiceUnavailable
			case 2:
				<-req.Context().Done() // no answer: the attempt times out
				return http.StatusOK
			case 3:
				return http.StatusBadGateway
			}
			return http.StatusOK
		})
		s := webhooktest.Settings(rc)
		// Short, since the second attempt waits it out, yet ample for the
		// attempts that are answered, under -race with tests in parallel.
		s.Timeout = time.Second
		r := start(t, eng, s)
		sub := r.subscribe(r.acc, rc.URL, "person.created")
		r.touch(r.acc, "p1")
		r.advance(window)
		wantRequests(t, rc, 1)
		ds := r.deliveries(sub)
		if ds[0].Status != domain.DeliveryPending || !ds[0].NextAttemptAt.Equal(r.clock.Now().Add(5*time.Second)) ||
			*ds[0].LastError != "HTTP 503 Service Unavailable" || r.webhook(sub).LastError == nil {
			t.Fatalf("after a 503: %+v", ds[0])
		}
		r.advance(5*time.Second - time.Millisecond)
		wantRequests(t, rc, 1)
		r.advance(time.Millisecond)
		wantRequests(t, rc, 2) // timed out
		if d := r.deliveries(sub)[0]; d.LastStatusCode != nil || !strings.Contains(*d.LastError, "timeout") {
			t.Fatalf("after a timeout: %+v", d)
		}
		r.advance(5 * time.Minute)
		r.advance(30 * time.Minute)
		reqs := wantRequests(t, rc, 4)
		ids := map[string]bool{}
		stamps := map[string]bool{}
		for _, q := range reqs {
			ids[q.Header.Get("Service-Delivery-Id")] = true
			ids[decode(t, q).ID] = true
			stamps[q.Header.Get("Service-Timestamp")] = true
			if string(q.Body) != string(reqs[0].Body) {
				t.Fatal("a retry changed the body")
			}
		}
		if len(ids) != 1 || len(stamps) != 4 {
			t.Fatalf("ids %v, signing times %v: want one id and four signing times", ids, stamps)
		}
		d, attempts, err := r.st.GetDelivery(context.Background(), r.acc, sub.ID, reqs[0].Header.Get("Service-Delivery-Id"))
		if err != nil || d.Status != domain.DeliverySucceeded || d.Attempts != 4 || len(attempts) != 4 {
			t.Fatalf("log %+v %+v %v", d, attempts, err)
		}
		want := []time.Duration{0, 5 * time.Second, 5*time.Second + 5*time.Minute, 5*time.Second + 35*time.Minute}
		for i, a := range attempts {
			if !a.AttemptedAt.Equal(t0.Add(window + want[i])) {
				t.Errorf("attempt %d at %s, want %s", i+1, a.AttemptedAt.Sub(t0), window+want[i])
			}
		}
		if attempts[1].StatusCode != nil || attempts[1].Error == nil || *attempts[2].StatusCode != 502 || *attempts[3].StatusCode != 200 {
			t.Fatalf("attempt log %+v", attempts)
		}
		// Each attempt keeps the headers it was sent with, the one that got
		// no answer included; the transport's own are not pds's to record.
		for i, a := range attempts {
			wantSentHeaders(t, a.RequestHeaders, reqs[i].Header, sub.Secret)
		}
		if r.webhook(sub).LastError != nil {
			t.Fatal("a success did not clear the subscription's last_error")
		}
	})
}

// wantSentHeaders fails unless recorded holds every header the receiver
// got but the transport's, as it got them but for the signatures, which
// keep their time and scheme and lose the value a reader of the log could
// replay the delivery with; and nothing holds the secret.
func wantSentHeaders(t *testing.T, recorded map[string]string, got http.Header, secret string) {
	t.Helper()
	transport := []string{"Accept-Encoding", "Content-Length"}
	for name := range got {
		want := got.Get(name)
		switch name {
		case "Service-Signature": // t=<unix>,v1=<hex>
			stamp, _, _ := strings.Cut(want, ",")
			want = stamp + ",v1=…redacted"
		case "Webhook-Signature": // v1,<base64> for each secret that signs
			sigs := strings.Fields(want)
			for i := range sigs {
				sigs[i] = "v1,…redacted"
			}
			want = strings.Join(sigs, " ")
		}
		if !slices.Contains(transport, name) && recorded[name] != want {
			t.Errorf("recorded %s %q; the receiver got %q, which the log keeps as %q", name, recorded[name], got.Get(name), want)
		}
	}
	for name, value := range recorded {
		if _, ok := got[name]; !ok || strings.Contains(value, secret) {
			t.Errorf("recorded %s %q, which the receiver did not get or which holds the secret", name, value)
		}
	}
	if !strings.HasPrefix(recorded["Service-Signature"], "t=") || recorded["User-Agent"] == "" {
		t.Errorf("recorded headers %v", recorded)
	}
}

func TestRetriesRunOutThenTheDeliveryFails(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rc := webhooktest.NewReceiver(t)
		rc.Always(http.StatusInternalServerError)
		s := webhooktest.Settings(rc)
		s.Schedule = []time.Duration{0, time.Second, time.Minute}
		r := start(t, eng, s)
		sub := r.subscribe(r.acc, rc.URL, "person.created")
		r.touch(r.acc, "p1")
		r.advance(window)
		r.advance(time.Second)
		r.advance(time.Minute)
		r.advance(24 * time.Hour)
		wantRequests(t, rc, 3)
		d := r.deliveries(sub)[0]
		if d.Status != domain.DeliveryFailed || d.NextAttemptAt != nil || !strings.Contains(*d.LastError, "gave up after 3 attempts") {
			t.Fatalf("%+v", d)
		}
		if w := r.webhook(sub); !w.IsActive || w.StreakFailures != 1 {
			t.Fatalf("one failed delivery: %+v", w)
		}
	})
}

func TestRedirectsAndClientErrorsAreNotRetried(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rc := webhooktest.NewReceiver(t)
		rc.Respond(func(_ int, req *http.Request) int {
			code, _ := strconv.Atoi(strings.TrimPrefix(req.URL.Path, "/status/"))
			return code
		})
		r := start(t, eng, webhooktest.Settings(rc))
		codes := []int{301, 302, 307, 308, 400, 401, 403, 404, 408, 422, 429}
		subs := map[int]domain.Webhook{}
		for _, c := range codes {
			subs[c] = r.subscribe(r.acc, fmt.Sprintf("%s/status/%d", rc.Server.URL, c), "person.created")
		}
		r.touch(r.acc, "p1")
		r.advance(window)
		r.advance(48 * time.Hour)
		for _, req := range wantRequests(t, rc, len(codes)) {
			if req.Path == webhooktest.FollowedPath {
				t.Fatal("a redirect was followed")
			}
		}
		for c, sub := range subs {
			d := r.deliveries(sub)[0]
			if d.Status != domain.DeliveryFailed || d.Attempts != 1 || *d.LastStatusCode != c || !strings.Contains(*d.LastError, strconv.Itoa(c)) {
				t.Errorf("%d: %+v", c, d)
			}
			if w := r.webhook(sub); !w.IsActive || w.LastError == nil {
				t.Errorf("%d: subscription %+v", c, w)
			}
		}
	})
}

func TestGoneRetiresTheSubscriptionAtOnce(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rc := webhooktest.NewReceiver(t)
		rc.FirstThen(http.StatusServiceUnavailable, http.StatusGone)
		r := start(t, eng, webhooktest.Settings(rc))
		sub := r.subscribe(r.acc, rc.URL, "person.created")
		r.touch(r.acc, "p1")
		r.clock.Advance(time.Second)
		r.touch(r.acc, "p2")
		r.advance(window - time.Second) // per_1: 503, retry in 5 s
		r.advance(time.Second)          // per_2: 410
		wantRequests(t, rc, 2)
		w := r.webhook(sub)
		if w.IsActive || w.DisabledReason == nil || *w.DisabledReason != domain.DisabledGone || !strings.Contains(*w.LastError, "410") {
			t.Fatalf("after 410: %+v", w)
		}
		for _, d := range r.deliveries(sub) {
			if d.Status != domain.DeliveryFailed {
				t.Fatalf("delivery %+v still %s", d, d.Status)
			}
		}
		r.touch(r.acc, "p3")
		r.advance(window)
		r.advance(24 * time.Hour)
		wantRequests(t, rc, 2)
		if n := len(r.deliveries(sub)); n != 2 {
			t.Fatalf("%d deliveries queued for a retired subscription", n)
		}
	})
}

func TestAFailureStreakDeactivatesAndReactivationClearsIt(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rc := webhooktest.NewReceiver(t)
		rc.Always(http.StatusBadRequest)
		r := start(t, eng, webhooktest.Settings(rc))
		sub := r.subscribe(r.acc, rc.URL, "person.created")
		fail := func(person string, after time.Duration) {
			r.clock.Advance(after)
			r.touch(r.acc, person)
			r.advance(window)
		}
		fail("per_1", 0)
		fail("per_2", 119*time.Hour)
		if w := r.webhook(sub); !w.IsActive || w.StreakFailures != 2 {
			t.Fatalf("a 119 h streak: %+v", w)
		}
		fail("per_3", 2*time.Hour)
		w := r.webhook(sub)
		if w.IsActive || *w.DisabledReason != domain.DisabledFailures || !strings.Contains(*w.LastError, "400") {
			t.Fatalf("a 121 h streak of 3 failed deliveries: %+v", w)
		}
		fail("per_4", time.Hour)
		wantRequests(t, rc, 3)

		on := true
		if _, err := r.st.UpdateWebhook(context.Background(), r.acc, sub.ID, domain.WebhookUpdate{IsActive: &on}, r.clock.Now()); err != nil {
			t.Fatal(err)
		}
		rc.Always(http.StatusOK)
		fail("per_5", time.Hour)
		wantRequests(t, rc, 4)
		if w := r.webhook(sub); !w.IsActive || w.StreakFailures != 0 || w.LastError != nil || w.DisabledReason != nil {
			t.Fatalf("after reactivation and a success: %+v", w)
		}
	})
}

func TestRotationKeepsInFlightDeliveriesOnThePreviousSecret(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rc := webhooktest.NewReceiver(t)
		rc.FirstThen(http.StatusServiceUnavailable, http.StatusOK)
		r := start(t, eng, webhooktest.Settings(rc))
		sub := r.subscribe(r.acc, rc.URL, "person.created")
		before := r.touch(r.acc, "before")
		r.advance(window) // 503: the delivery stays in flight
		rotated, rounds, err := r.st.RotateWebhookSecret(context.Background(), r.acc, sub.ID, webhook.NewSecret(), r.clock.Now(), r.clock.Now())
		if err != nil || len(rounds) != 1 {
			t.Fatal(rounds, err)
		}
		r.touch(r.acc, "after")
		r.advance(window)
		reqs := wantRequests(t, rc, 3)
		verifies := func(req webhooktest.Request, secret string) bool {
			return webhookverify.Verify(req.Header, req.Body, []string{secret}, r.clock.Now(), webhookverify.Options{}) == nil
		}
		for i, req := range reqs {
			old := strings.Contains(string(req.Body), before)
			if old != verifies(req, sub.Secret) || old == verifies(req, rotated.Secret) {
				t.Errorf("request %d (made before the rotation: %v) is signed with the wrong secret", i+1, old)
			}
		}
		if err := webhookverify.Verify(reqs[1].Header, reqs[1].Body, []string{rotated.Secret, sub.Secret}, r.clock.Now(), webhookverify.Options{}); err != nil {
			t.Fatalf("a receiver holding both secrets refuses the retry: %v", err)
		}
	})
}

// TestConnectTimeRefusalOfARebindingName: the target's name resolves to
// loopback when the delivery connects; the guard refuses the address it was
// about to dial and the receiver, listening there, gets nothing.
func TestConnectTimeRefusalOfARebindingName(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rc := webhooktest.NewReceiver(t)
		s := webhooktest.Settings(rc)
		s.AllowPrivate = false
		s.Resolver = fakeResolver{"example.com": {"127.0.0.1"}}
		r := start(t, eng, s)
		_, port, _ := strings.Cut(strings.TrimPrefix(rc.Server.URL, "https://"), ":")
		sub := r.subscribe(r.acc, "https://example.com:"+port+"/hook", "person.created")
		r.touch(r.acc, "p1")
		r.advance(window)
		wantRequests(t, rc, 0)
		d := r.deliveries(sub)[0]
		if d.Status != domain.DeliveryPending || d.LastStatusCode != nil || !strings.Contains(*d.LastError, "127.0.0.1 is not a public address (loopback)") {
			t.Fatalf("%+v / %s", d, *d.LastError)
		}
	})
}

// TestPlainHTTPToLoopbackWithPrivateTargetsAllowed: with private targets
// allowed (--webhook-allow-private), an http subscription on loopback gets
// signed deliveries; the same subscription under the default settings (a
// server restarted without the flag) gets nothing, refused when dialled.
func TestPlainHTTPToLoopbackWithPrivateTargetsAllowed(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rc := webhooktest.NewPlainReceiver(t)
		s := webhooktest.Settings(rc)
		if err := s.Guard().CheckURL(context.Background(), rc.URL); err != nil {
			t.Fatalf("the target %s is refused: %v", rc.URL, err)
		}
		r := start(t, eng, s)
		sub := r.subscribe(r.acc, rc.URL, "person.created", "person.updated")
		person := r.touch(r.acc, "p1")
		r.advance(window)
		got := wantRequests(t, rc, 1)[0]
		if err := webhookverify.Verify(got.Header, got.Body, []string{sub.Secret}, r.clock.Now(), webhookverify.Options{}); err != nil {
			t.Fatalf("the delivery does not verify: %v", err)
		}
		if b := decode(t, got); b.Event != "person.created" || !strings.Contains(string(b.Data), person) {
			t.Fatalf("body %s", got.Body)
		}
		if d := r.deliveries(sub)[0]; d.Status != domain.DeliverySucceeded {
			t.Fatalf("delivery %+v", d)
		}

		s.AllowPrivate = false
		strict := newRig(t, r.st, r.clock, s)
		strict.touch(r.acc, "p1")
		strict.advance(time.Hour)
		wantRequests(t, rc, 1)
		ds := r.deliveries(sub)
		if len(ds) != 2 || ds[0].Status != domain.DeliveryPending || ds[0].LastError == nil ||
			!strings.Contains(*ds[0].LastError, "127.0.0.1 is not a public address (loopback)") {
			t.Fatalf("without private targets: %+v", ds[0])
		}
	})
}

// TestALocalListenerAloneReachesLoopback: with the default settings (no
// private targets), a local listener's subscription (pds webhooks listen)
// gets signed deliveries on its plain-http loopback receiver, while an
// ordinary subscription to the same receiver is refused when dialled; an
// instance on another host leaves the listener's deliveries alone, whether
// made by its own closing bursts or due for a claim.
func TestALocalListenerAloneReachesLoopback(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rc := webhooktest.NewPlainReceiver(t)
		s := webhooktest.Settings(rc)
		s.AllowPrivate = false
		s.Host = "laptop"
		r := start(t, eng, s)
		other := s
		other.Host = "server"
		remote := newRig(t, r.st, r.clock, other)

		listener := domain.Webhook{ID: domain.NewID("wh"), AccountID: r.acc, Name: "listen", TargetURL: rc.Server.URL + "/",
			Events: domain.WebhookEvents, IsActive: true, Secret: webhook.NewSecret(), SecretVersion: 1, CreatedAt: r.clock.Now(),
			LocalListener: true, ListenerHost: "laptop"}
		if err := r.st.CreateWebhook(context.Background(), listener); err != nil {
			t.Fatal(err)
		}
		ordinary := r.subscribe(r.acc, rc.Server.URL+"/ordinary", "person.created")

		person := r.touch(r.acc, "p1")
		remote.advance(window) // closes the burst, attempts the ordinary delivery only
		if got := rc.Requests(); len(got) != 0 {
			t.Fatalf("the other host's instance reached the receiver: %+v", got)
		}
		if ds := r.deliveries(listener); len(ds) != 1 || ds[0].Status != domain.DeliveryPending || ds[0].Attempts != 0 {
			t.Fatalf("the other host's instance attempted the listener's delivery: %+v", ds)
		}
		r.run()
		got := wantRequests(t, rc, 1)[0]
		if got.Path != "/" {
			t.Fatalf("delivered to %s", got.Path)
		}
		if err := webhookverify.Verify(got.Header, got.Body, []string{listener.Secret}, r.clock.Now(), webhookverify.Options{}); err != nil {
			t.Fatalf("the delivery does not verify: %v", err)
		}
		if b := decode(t, got); b.Event != "person.created" || !strings.Contains(string(b.Data), person) {
			t.Fatalf("body %s", got.Body)
		}
		if ds := r.deliveries(listener); ds[0].Status != domain.DeliverySucceeded {
			t.Fatalf("listener's delivery %+v", ds[0])
		}
		ds := r.deliveries(ordinary)
		if len(ds) != 1 || ds[0].Status != domain.DeliveryPending || ds[0].LastError == nil ||
			!strings.Contains(*ds[0].LastError, "127.0.0.1 is not a public address (loopback)") {
			t.Fatalf("the ordinary subscription's delivery: %+v", ds)
		}

		// Made by a closing burst on the listener's own host: leased to
		// its maker and sent at once.
		r.clock.Advance(time.Hour)
		r.touch(r.acc, "p1")
		r.advance(window)
		if b := decode(t, wantRequests(t, rc, 2)[1]); b.Event != "person.updated" {
			t.Fatalf("second delivery %s", rc.Requests()[1].Body)
		}
	})
}

// TestRestartDeliversWhatWasCommitted: an instance stopped inside the window,
// and one stopped between two attempts; a new instance on the same database
// delivers, under the same delivery id.
func TestRestartDeliversWhatWasCommitted(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rc := webhooktest.NewReceiver(t)
		rc.FirstThen(http.StatusInternalServerError, http.StatusOK)
		db := eng.NewDatabase(t)
		clk := clock.NewFake(t0)
		first := newRig(t, eng.Open(t, db), clk, webhooktest.Settings(rc))
		first.acc = first.account()
		sub := first.subscribe(first.acc, rc.URL, "person.created")
		first.touch(first.acc, "p1")
		first.advance(window / 2)
		first.st.Close()

		second := newRig(t, eng.Open(t, db), clk, webhooktest.Settings(rc))
		second.advance(window / 2)
		wantRequests(t, rc, 1) // the 500
		second.st.Close()

		third := newRig(t, eng.Open(t, db), clk, webhooktest.Settings(rc))
		third.advance(5 * time.Second)
		reqs := wantRequests(t, rc, 2)
		if reqs[0].Header.Get("Service-Delivery-Id") != reqs[1].Header.Get("Service-Delivery-Id") {
			t.Fatal("the retry after the restart has another id")
		}
		if d := third.deliveries(sub)[0]; d.Status != domain.DeliverySucceeded || d.Attempts != 2 {
			t.Fatalf("%+v", d)
		}
	})
}

// TestInstancesShareTheWork: two instances (two stores on one database, two
// workers) and many changed persons: every burst is delivered once per
// subscription.
func TestInstancesShareTheWork(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rc := webhooktest.NewReceiver(t)
		db := eng.NewDatabase(t)
		clk := clock.NewFake(t0)
		s := webhooktest.Settings(rc)
		s.Batch = 7
		a := newRig(t, eng.Open(t, db), clk, s)
		b := newRig(t, eng.Open(t, db), clk, s)
		a.acc = a.account()
		subs := []domain.Webhook{
			a.subscribe(a.acc, rc.URL, "person.created", "person.updated"),
			a.subscribe(a.acc, rc.URL, "person.created"),
		}
		const persons = 60
		for i := range persons {
			a.touch(a.acc, fmt.Sprintf("p%03d", i))
			b.touch(a.acc, fmt.Sprintf("p%03d", i))
		}
		clk.Advance(window)
		var wg sync.WaitGroup
		for _, inst := range []*rig{a, b, a, b} {
			wg.Go(func() {
				if err := inst.worker.RunOnce(context.Background()); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		reqs := wantRequests(t, rc, persons*len(subs))
		seen := map[string]int{}
		for _, q := range reqs {
			var body struct {
				Event string `json:"event"`
				Data  struct {
					ID string `json:"id"`
				} `json:"data"`
			}
			if err := json.Unmarshal(q.Body, &body); err != nil {
				t.Fatalf("body %s: %v", q.Body, err)
			}
			if body.Event != "person.created" {
				t.Fatalf("event %s", body.Event)
			}
			seen[q.Header.Get("Service-Webhook-Id")+" "+body.Data.ID]++
		}
		if len(seen) != persons*len(subs) {
			t.Fatalf("%d distinct (subscription, person) deliveries, want %d", len(seen), persons*len(subs))
		}
		for _, sub := range subs {
			if n := len(a.deliveries(sub)); n != persons {
				t.Fatalf("subscription %s has %d deliveries, want %d", sub.ID, n, persons)
			}
		}
	})
}

// TestRenderingOnlyForListenersAndRetriedAfterAFailure: a burst nobody
// listens to closes without rendering the person; a render that fails leaves
// the burst in the outbox, and it is delivered once its lease has run out.
func TestRenderingOnlyForListenersAndRetriedAfterAFailure(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rc := webhooktest.NewReceiver(t)
		r := start(t, eng, webhooktest.Settings(rc))
		r.subscribe(r.acc, rc.URL, "person.updated")
		created := r.touch(r.acc, "created") // a person.created burst
		elsewhere := r.touch(r.account(), "elsewhere")
		r.advance(window)
		if n := r.render.Renders(created) + r.render.Renders(elsewhere); n != 0 {
			t.Fatalf("%d renders for bursts nobody listens to", n)
		}

		r.render.Fail(errors.New("database unavailable"))
		r.touch(r.acc, "created") // now a person.updated burst
		r.advance(window)
		wantRequests(t, rc, 0)
		r.render.Fail(nil)
		r.advance(59 * time.Second)
		wantRequests(t, rc, 0) // still leased
		r.advance(time.Second)
		if b := decode(t, wantRequests(t, rc, 1)[0]); !strings.Contains(string(b.Data), created) {
			t.Fatalf("delivered %s", b.Data)
		}
	})
}

// TestASuccessBreaksTheFailureStreak: failures more than five days apart do
// not deactivate when a 2xx came between them; the streak restarts.
func TestASuccessBreaksTheFailureStreak(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rc := webhooktest.NewReceiver(t)
		r := start(t, eng, webhooktest.Settings(rc))
		sub := r.subscribe(r.acc, rc.URL, "person.created")
		deliver := func(person string, after time.Duration, code int) {
			rc.Always(code)
			r.clock.Advance(after)
			r.touch(r.acc, person)
			r.advance(window)
		}
		deliver("per_1", 0, http.StatusBadRequest)
		deliver("per_2", 60*time.Hour, http.StatusOK)
		deliver("per_3", 61*time.Hour, http.StatusBadRequest)
		deliver("per_4", time.Hour, http.StatusBadRequest)
		w := r.webhook(sub)
		if !w.IsActive || w.StreakFailures != 2 || !w.StreakStartedAt.Equal(t0.Add(121*time.Hour+3*window)) {
			t.Fatalf("a streak broken by a success deactivated or was not restarted: %+v", w)
		}
		wantRequests(t, rc, 4)
	})
}

// TestRotationSignsEveryLaterAttemptOfAnOlderDeliveryWithItsSecret: a
// delivery made before two rotations keeps its secret for every retry; a
// delivery made (its burst closed) after them uses the newest secret, even
// when its person changed before them.
func TestRotationSignsEveryLaterAttemptOfAnOlderDeliveryWithItsSecret(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rc := webhooktest.NewReceiver(t)
		rc.Always(http.StatusServiceUnavailable)
		r := start(t, eng, webhooktest.Settings(rc))
		sub := r.subscribe(r.acc, rc.URL, "person.created")
		rotate := func() string {
			t.Helper()
			w, _, err := r.st.RotateWebhookSecret(context.Background(), r.acc, sub.ID, webhook.NewSecret(), r.clock.Now(), r.clock.Now())
			if err != nil {
				t.Fatal(err)
			}
			return w.Secret
		}
		early := r.touch(r.acc, "early")
		r.advance(window) // early: attempt 1
		second := rotate()
		late := r.touch(r.acc, "late") // its burst closes after both rotations
		r.advance(5 * time.Second)     // early: attempt 2
		third := rotate()
		r.advance(window) // early: attempt 3; late: attempt 1
		rc.Always(http.StatusOK)
		r.advance(30 * time.Minute) // early: attempt 4; late: attempt 2
		want := map[string]string{early: sub.Secret, late: third}
		attempts := map[string]int{}
		for i, req := range rc.Requests() {
			var data struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal(decode(t, req).Data, &data); err != nil {
				t.Fatalf("request %d: data: %v", i+1, err)
			}
			attempts[data.ID]++
			for _, secret := range []string{sub.Secret, second, third} {
				ok := webhookverify.Verify(req.Header, req.Body, []string{secret}, r.clock.Now(), webhookverify.Options{Tolerance: 24 * time.Hour}) == nil
				if ok != (secret == want[data.ID]) {
					t.Errorf("request %d (person %s, attempt %d): verification with %s...: %v", i+1, data.ID, attempts[data.ID], secret[:10], ok)
				}
			}
		}
		if attempts[early] != 4 || attempts[late] != 2 || len(attempts) != 2 {
			t.Fatalf("attempts per person %v", attempts)
		}
	})
}

// TestAChangeAfterTheWindowClosedOpensANewBurst: the window closes when no
// change came for its length, whether or not a worker has got round to the
// burst yet. A change after that (here while the worker lags) is not folded
// into the closed creation burst: it opens its own, delivered as
// person.updated.
func TestAChangeAfterTheWindowClosedOpensANewBurst(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		both, updated := webhooktest.NewReceiver(t), webhooktest.NewReceiver(t)
		r := start(t, eng, webhooktest.Settings(both, updated))
		r.subscribe(r.acc, both.URL, "person.created", "person.updated")
		r.subscribe(r.acc, updated.URL, "person.updated")
		person := r.touch(r.acc, "p1")
		r.clock.Advance(window + 2*time.Minute) // the worker lags
		r.touch(r.acc, "p1")
		r.run()
		if b := decode(t, wantRequests(t, both, 1)[0]); b.Event != "person.created" || !strings.Contains(string(b.Data), person) {
			t.Fatalf("first burst %s", b.Event)
		}
		wantRequests(t, updated, 0)
		r.advance(window - time.Millisecond)
		wantRequests(t, updated, 0)
		r.advance(time.Millisecond)
		if b := decode(t, wantRequests(t, updated, 1)[0]); b.Event != "person.updated" {
			t.Fatalf("the change after the window was delivered as %s", b.Event)
		}
		if b := decode(t, wantRequests(t, both, 2)[1]); b.Event != "person.updated" {
			t.Fatalf("second burst %s", b.Event)
		}
		r.advance(24 * time.Hour)
		wantRequests(t, both, 2)
	})
}
