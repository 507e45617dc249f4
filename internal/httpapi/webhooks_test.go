package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/httpapi/apitest"
	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/internal/webhook"
	"github.com/pds-dev/pds/internal/webhook/webhooktest"
)

type webhookView struct {
	ID             string   `json:"id"`
	Name           string   `json:"name"`
	TargetURL      string   `json:"target_url"`
	Events         []string `json:"events"`
	IsActive       bool     `json:"is_active"`
	DisabledReason *string  `json:"disabled_reason"`
	LastError      *string  `json:"last_error"`
	SecretHint     string   `json:"secret_hint"`
	Scheme         string   `json:"signature_scheme"`
	DateCreated    string   `json:"date_created"`
	// Only in the create and rotate responses.
	Secret                  string `json:"secret"`
	PreviousSecretExpiresAt string `json:"previous_secret_expires_at"`
}

type deliveryView struct {
	ID             string  `json:"id"`
	Event          string  `json:"event"`
	PersonID       string  `json:"person_id"`
	Status         string  `json:"status"`
	Attempts       int     `json:"attempts"`
	LastStatusCode *int    `json:"last_status_code"`
	LastError      *string `json:"last_error"`
	NextAttemptAt  *string `json:"next_attempt_at"`
	Created        string  `json:"created"`
	AttemptLog     []struct {
		AttemptedAt    string            `json:"attempted_at"`
		StatusCode     *int              `json:"status_code"`
		Error          *string           `json:"error"`
		DurationMS     int               `json:"duration_ms"`
		RequestHeaders map[string]string `json:"request_headers"`
	} `json:"attempt_log"`
}

// webhookEnv is an API server with a webhook worker on the same store and
// clock, delivering to the given receivers.
type webhookEnv struct {
	*apitest.Env
	worker *webhook.Worker
	window time.Duration
	logs   *testenv.Buffer // the worker's log
}

func newWebhookEnv(t *testing.T, eng testenv.Engine, s webhook.Settings) *webhookEnv {
	t.Helper()
	cfg := apitest.DefaultConfig()
	cfg.Webhook = s
	env := apitest.New(t, eng, apitest.WithConfig(cfg))
	render := webhook.PersonRenderer{Persons: env.Store, PublicURL: cfg.PublicURL}
	logs := &testenv.Buffer{}
	w, err := webhook.NewWorker(env.Store, render, env.Clock, s, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return &webhookEnv{Env: env, worker: w, window: 5 * time.Minute, logs: logs}
}

// run lets the worker do everything due now.
func (e *webhookEnv) run() {
	e.T.Helper()
	if err := e.worker.RunOnce(context.Background()); err != nil {
		e.T.Fatal(err)
	}
}

// touch creates the person with this external id, or changes it, through
// the API, and returns its id.
func (e *webhookEnv) touch(key, externalID string) string {
	e.T.Helper()
	var p struct {
		ID string `json:"id"`
	}
	e.Post(key, "/persons", map[string]any{"external_id": externalID, "first_name": domain.RandomHex(4)}).Want(200, 201).JSON(&p)
	return p.ID
}

func createWebhook(env *apitest.Env, key, url string, events ...string) webhookView {
	env.T.Helper()
	var w webhookView
	env.Post(key, "/webhooks", map[string]any{"name": "crm sync", "target_url": url, "events": events}).Want(201).JSON(&w)
	return w
}

// fakeResolver answers from a table; a missing name does not resolve.
type fakeResolver map[string][]string

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	addrs, ok := f[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	out := make([]netip.Addr, len(addrs))
	for i, a := range addrs {
		out[i] = netip.MustParseAddr(a)
	}
	return out, nil
}

var secretPattern = regexp.MustCompile(`^whsec_[A-Za-z0-9+/]{44}$`)

func TestWebhookSubscriptions(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		rc := webhooktest.NewReceiver(t)
		env := newWebhookEnv(t, eng, webhooktest.Settings(rc))
		acc := env.NewAccount()
		key := env.Key(acc)
		otherKey := env.Key(env.NewAccount())

		created := createWebhook(env.Env, key, rc.URL, "person.created")
		if !strings.HasPrefix(created.ID, "wh_") || !secretPattern.MatchString(created.Secret) || created.Name != "crm sync" ||
			created.TargetURL != rc.URL || !created.IsActive || created.DisabledReason != nil || created.LastError != nil ||
			created.SecretHint != "whsec_..."+created.Secret[len(created.Secret)-4:] || created.DateCreated != "2026-11-21T10:00:00.000Z" {
			t.Fatalf("created %+v", created)
		}
		got := env.Get(key, "/webhooks/"+created.ID).Want(200)
		if _, has := got.Map()["secret"]; has {
			t.Fatal("a read shows the full secret")
		}
		var read webhookView
		got.JSON(&read)
		if read.SecretHint != created.SecretHint || read.ID != created.ID {
			t.Fatalf("read %+v", read)
		}
		env.Clock.Advance(time.Second)
		second := createWebhook(env.Env, key, rc.URL, "person.updated", "person.created")
		if second.Secret == created.Secret {
			t.Fatal("two subscriptions share a secret")
		}
		all := listOf[webhookView](env.Env, key, "/webhooks")
		if all.Total != 2 || len(all.Items) != 2 || all.Items[0].ID != created.ID || all.Items[1].ID != second.ID || all.Items[0].Secret != "" {
			t.Fatalf("list %+v", all)
		}
		if p := listOf[webhookView](env.Env, key, "/webhooks?page=2&size=1"); p.Total != 2 || len(p.Items) != 1 || p.Items[0].ID != second.ID {
			t.Fatalf("page 2 %+v", p)
		}
		wantInvalid(t, env.Get(key, "/webhooks?size=101").Want(400).Problem(), "size")

		var patched webhookView
		env.Patch(key, "/webhooks/"+created.ID, map[string]any{"name": "renamed", "events": []string{"person.updated"}}).Want(200).JSON(&patched)
		if patched.Name != "renamed" || len(patched.Events) != 1 || patched.Events[0] != "person.updated" || patched.TargetURL != rc.URL {
			t.Fatalf("patched %+v", patched)
		}
		env.Patch(key, "/webhooks/"+created.ID, map[string]any{"is_active": false}).Want(200).JSON(&patched)
		if patched.IsActive || patched.DisabledReason == nil || *patched.DisabledReason != "manual" {
			t.Fatalf("switched off %+v", patched)
		}
		env.Patch(key, "/webhooks/"+created.ID, map[string]any{"is_active": true}).Want(200).JSON(&patched)
		if !patched.IsActive || patched.DisabledReason != nil {
			t.Fatalf("switched on %+v", patched)
		}

		t.Run("another account sees none of it", func(t *testing.T) {
			if p := listOf[webhookView](env.Env, otherKey, "/webhooks"); p.Total != 0 || len(p.Items) != 0 {
				t.Fatalf("foreign list %+v", p)
			}
			id := created.ID
			wantNotFound(t, env.Get(otherKey, "/webhooks/"+id), "webhook", id)
			wantNotFound(t, env.Patch(otherKey, "/webhooks/"+id, map[string]any{"name": "x"}), "webhook", id)
			wantNotFound(t, env.Delete(otherKey, "/webhooks/"+id), "webhook", id)
			wantNotFound(t, env.Do(apitest.Request{Method: "POST", Path: "/webhooks/" + id + "/rotate-secret", Key: otherKey}), "webhook", id)
			wantNotFound(t, env.Get(otherKey, "/webhooks/"+id+"/deliveries"), "webhook", id)
		})

		env.Delete(key, "/webhooks/"+second.ID).Want(204)
		wantNotFound(t, env.Get(key, "/webhooks/"+second.ID), "webhook", second.ID)
		wantNotFound(t, env.Delete(key, "/webhooks/"+second.ID), "webhook", second.ID)
		if p := listOf[webhookView](env.Env, key, "/webhooks"); p.Total != 1 {
			t.Fatalf("after delete %+v", p)
		}
	})
}

// TestPlainHTTPTargets: http is a target only on loopback and only on a
// server that allows private targets; elsewhere it is a 400 saying what
// would do.
func TestPlainHTTPTargets(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		resolver := fakeResolver{"hooks.example": {"93.184.215.14"}}
		strict := newWebhookEnv(t, eng, webhook.Settings{Resolver: resolver})
		open := newWebhookEnv(t, eng, webhook.Settings{Resolver: resolver, AllowPrivate: true})
		strictKey, openKey := strict.Key(strict.NewAccount()), open.Key(open.NewAccount())
		for _, url := range []string{"http://localhost:3000/hook", "http://127.0.0.1:3000/hook", "http://[::1]:3000/hook"} {
			body := map[string]any{"name": "dev", "target_url": url, "events": []string{"person.created"}}
			p := strict.Post(strictKey, "/webhooks", body).Want(400).Problem()
			wantInvalid(t, p, "/target_url")
			if !strings.Contains(p.Detail, `target_url must use https, not "http"`) {
				t.Errorf("%s without private targets: %q", url, p.Detail)
			}
			if w := createWebhook(open.Env, openKey, url, "person.created"); w.TargetURL != url {
				t.Errorf("%s with private targets: %+v", url, w)
			}
		}
		for _, url := range []string{"http://hooks.example/hook", "http://192.168.1.10:3000/hook"} {
			p := open.Post(openKey, "/webhooks", map[string]any{"name": "dev", "target_url": url, "events": []string{"person.created"}}).Want(400).Problem()
			wantInvalid(t, p, "/target_url")
			if !strings.Contains(p.Detail, "http only on loopback (localhost, 127.0.0.1, [::1]) with --webhook-allow-private; use https") {
				t.Errorf("%s with private targets: %q", url, p.Detail)
			}
		}
	})
}

// TestALocalListenerThroughTheAPI: a local listener's subscription (made
// by pds webhooks listen, never through the API) is read and listed like
// any other, its http target included, within the contract; the API cannot
// make one, and a target set through it ends the exception.
func TestALocalListenerThroughTheAPI(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := newWebhookEnv(t, eng, webhook.Settings{Resolver: fakeResolver{"hooks.example": {"93.184.215.14"}}})
		acc := env.NewAccount()
		key := env.Key(acc)
		ordinary := createWebhook(env.Env, key, "https://hooks.example/pds", "person.created")
		env.Clock.Advance(time.Second)
		lw := domain.Webhook{ID: domain.NewID("wh"), AccountID: acc, Name: "pds webhooks listen (laptop, 42)",
			TargetURL: "http://127.0.0.1:4242/", Events: domain.WebhookEvents, IsActive: true, Secret: webhook.NewSecret(),
			SecretVersion: 1, CreatedAt: env.Clock.Now(), UpdatedAt: env.Clock.Now(), LocalListener: true, ListenerHost: "laptop"}
		if err := env.Store.CreateWebhook(context.Background(), lw); err != nil {
			t.Fatal(err)
		}
		all := listOf[webhookView](env.Env, key, "/webhooks")
		if all.Total != 2 || all.Items[0].ID != ordinary.ID || all.Items[1].ID != lw.ID || all.Items[1].TargetURL != lw.TargetURL {
			t.Fatalf("list %+v", all)
		}
		got := env.Get(key, "/webhooks/"+lw.ID).Want(200).Map()
		if len(got) != 13 || got["target_url"] != lw.TargetURL {
			t.Fatalf("read %v: the view is the ordinary one", got)
		}
		wantInvalid(t, env.Post(key, "/webhooks", map[string]any{"name": "x", "target_url": "http://127.0.0.1:4242/",
			"events": []string{"person.created"}, "local_listener": true}).Want(400).Problem(), "/local_listener")
		wantInvalid(t, env.Patch(key, "/webhooks/"+lw.ID, map[string]any{"local_listener": true}).Want(400).Problem(), "/local_listener")
		wantInvalid(t, env.Patch(key, "/webhooks/"+lw.ID, map[string]any{"target_url": "http://127.0.0.1:4243/"}).Want(400).Problem(), "/target_url")

		env.Patch(key, "/webhooks/"+lw.ID, map[string]any{"name": "renamed"}).Want(200)
		if w, err := env.Store.GetWebhook(context.Background(), acc, lw.ID); err != nil || !w.LocalListener {
			t.Fatalf("a rename ended the local listener: %+v, %v", w, err)
		}
		env.Patch(key, "/webhooks/"+lw.ID, map[string]any{"target_url": "https://hooks.example/moved"}).Want(200)
		if w, err := env.Store.GetWebhook(context.Background(), acc, lw.ID); err != nil || w.LocalListener {
			t.Fatalf("a target set through the API kept the local listener: %+v, %v", w, err)
		}
		env.Delete(key, "/webhooks/"+lw.ID).Want(204)
	})
}

func TestWebhookInputIsValidated(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		s := webhook.Settings{Resolver: fakeResolver{
			"hooks.example":    {"93.184.215.14"},
			"internal.example": {"10.1.2.3"},
			"rebind.example":   {"93.184.215.14", "::1"},
		}}
		env := newWebhookEnv(t, eng, s)
		key := env.Key(env.NewAccount())
		ok := map[string]any{"name": "n", "target_url": "https://hooks.example/pds", "events": []string{"person.created"}}
		with := func(k string, v any) map[string]any {
			m := map[string]any{}
			for kk, vv := range ok {
				m[kk] = vv
			}
			if v == nil {
				delete(m, k)
			} else {
				m[k] = v
			}
			return m
		}
		for _, c := range []struct {
			body    map[string]any
			pointer string
			detail  string
		}{
			{with("name", nil), "/name", "required"},
			{with("name", ""), "/name", "1 to 255"},
			{with("name", strings.Repeat("é", 256)), "/name", "1 to 255"},
			{with("target_url", nil), "/target_url", "required"},
			{with("target_url", "http://hooks.example/pds"), "/target_url", "https"},
			{with("target_url", "https://"+strings.Repeat("a", 2050)), "/target_url", "at most 2048"},
			{with("target_url", "https://127.0.0.1/pds"), "/target_url", "resolves to 127.0.0.1, which is not a public address (loopback)"},
			{with("target_url", "https://169.254.169.254/latest/meta-data"), "/target_url", "link-local"},
			{with("target_url", "https://100.100.1.1/"), "/target_url", "carrier-grade NAT"},
			{with("target_url", "https://[fd00::1]/"), "/target_url", "unique local"},
			{with("target_url", "https://[::ffff:10.0.0.1]/"), "/target_url", "IPv4-mapped 10.0.0.1, private"},
			{with("target_url", "https://[::ffff:127.0.0.1]/"), "/target_url", "IPv4-mapped 127.0.0.1, loopback"},
			{with("target_url", "https://[64:ff9b::a00:1]/"), "/target_url", "NAT64"},
			{with("target_url", "https://[2002:7f00:1::1]/"), "/target_url", "6to4"},
			{with("target_url", "https://0.0.0.0/"), "/target_url", "unspecified"},
			{with("target_url", "https://[::]/"), "/target_url", "unspecified"},
			{with("target_url", "https://internal.example/pds"), "/target_url", "internal.example of target_url resolves to 10.1.2.3, which is not a public address (private)"},
			{with("target_url", "https://rebind.example/pds"), "/target_url", "resolves to ::1, which is not a public address (loopback)"},
			{with("target_url", "https://unknown.example/pds"), "/target_url", "does not resolve"},
			{with("events", nil), "/events", "required"},
			{with("events", []string{}), "/events", "at least one"},
			{with("events", []string{"person.exploded"}), "/events", `"person.exploded"`},
			{with("events", []string{"person.created", "person.created"}), "/events", "twice"},
			{with("events", []string{"*"}), "/events", `"*"`},
			{with("secret", "whsec_mine"), "/secret", "not accepted"},
		} {
			p := env.Post(key, "/webhooks", c.body).Want(400).Problem()
			wantInvalid(t, p, c.pointer)
			if !strings.Contains(p.Detail, c.detail) {
				t.Errorf("%v: detail %q, want it to contain %q", c.body, p.Detail, c.detail)
			}
		}
		env.Do(apitest.Request{Method: "POST", Path: "/webhooks", Key: key, Body: "{}", ContentType: "text/plain"}).Want(415)
		hook := createWebhook(env.Env, key, "https://hooks.example/pds", "person.created")
		for _, c := range []struct {
			body    map[string]any
			pointer string
		}{
			{map[string]any{"name": nil}, "/name"},
			{map[string]any{"events": nil}, "/events"},
			{map[string]any{"is_active": nil}, "/is_active"},
			{map[string]any{"target_url": "https://internal.example/x"}, "/target_url"},
			{map[string]any{"target_url": "https://127.0.0.1/x"}, "/target_url"},
			{map[string]any{"target_url": "https://[::ffff:127.0.0.1]/x"}, "/target_url"},
			{map[string]any{"target_url": "https://100.64.0.1/x"}, "/target_url"},
			{map[string]any{"target_url": "https://[64:ff9b::a00:1]/x"}, "/target_url"},
			{map[string]any{"target_url": "https://[2002:a00:1::1]/x"}, "/target_url"},
			{map[string]any{"target_url": "https://0.0.0.0/x"}, "/target_url"},
			{map[string]any{"target_url": "http://hooks.example/x"}, "/target_url"},
			{map[string]any{"events": []string{}}, "/events"},
			{map[string]any{"is_active": "yes"}, "/is_active"},
		} {
			wantInvalid(t, env.Patch(key, "/webhooks/"+hook.ID, c.body).Want(400).Problem(), c.pointer)
		}
		if got := listOf[webhookView](env.Env, key, "/webhooks"); got.Total != 1 || got.Items[0].Name != "crm sync" {
			t.Fatalf("a refused write changed something: %+v", got)
		}
	})
}

func TestRotateSecret(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		rc := webhooktest.NewReceiver(t)
		rc.Always(http.StatusServiceUnavailable)
		env := newWebhookEnv(t, eng, webhooktest.Settings(rc))
		acc := env.NewAccount()
		key := env.Key(acc)
		hook := createWebhook(env.Env, key, rc.URL, "person.created")

		// No body and no Content-Type needed; nothing pending: the previous
		// secret is dropped at once.
		var rotated webhookView
		env.Do(apitest.Request{Method: "POST", Path: "/webhooks/" + hook.ID + "/rotate-secret", Key: key}).Want(200).JSON(&rotated)
		if !secretPattern.MatchString(rotated.Secret) || rotated.Secret == hook.Secret || rotated.ID != hook.ID ||
			rotated.SecretHint != "whsec_..."+rotated.Secret[len(rotated.Secret)-4:] || rotated.PreviousSecretExpiresAt != "2026-11-21T10:00:00.000Z" {
			t.Fatalf("rotated %+v", rotated)
		}
		var read webhookView
		env.Get(key, "/webhooks/"+hook.ID).Want(200).JSON(&read)
		if read.SecretHint != rotated.SecretHint {
			t.Fatalf("hint %s after rotation, want %s", read.SecretHint, rotated.SecretHint)
		}

		// A delivery waiting for its second attempt keeps the secret it was
		// made with until its last scheduled attempt: 5 s from its first,
		// then the rest of the schedule (75 h 35 min), plus at most 10% jitter.
		env.touch(key, "p1")
		env.Clock.Advance(env.window)
		firstAttempt := env.Clock.Now()
		env.run()
		env.Post(key, "/webhooks/"+hook.ID+"/rotate-secret", nil).Want(200).JSON(&rotated)
		want := firstAttempt.Add(5*time.Second + (75*time.Hour+35*time.Minute)*11/10)
		if rotated.PreviousSecretExpiresAt != want.Format("2006-01-02T15:04:05.000Z") {
			t.Fatalf("previous_secret_expires_at %s, want %s", rotated.PreviousSecretExpiresAt, want)
		}
	})
}

func TestDeliveryLogAndRedelivery(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		rc := webhooktest.NewReceiver(t)
		rc.Always(http.StatusServiceUnavailable)
		env := newWebhookEnv(t, eng, webhooktest.Settings(rc))
		acc := env.NewAccount()
		key := env.Key(acc)
		otherKey := env.Key(env.NewAccount())
		hook := createWebhook(env.Env, key, rc.URL, "person.created")
		base := "/webhooks/" + hook.ID + "/deliveries"

		p1 := env.touch(key, "p1")
		env.Clock.Advance(env.window)
		env.run()
		env.Clock.Advance(time.Hour)
		p2 := env.touch(key, "p2")
		env.Clock.Advance(env.window)
		rc.Always(http.StatusNotFound)
		env.run() // p2: 404; p1's retry, due long ago: 404 too

		log := listOf[deliveryView](env.Env, key, base)
		if log.Total != 2 || log.Items[0].PersonID != p2 || log.Items[1].PersonID != p1 {
			t.Fatalf("log (newest first) %+v", log)
		}
		first := log.Items[1]
		if first.Status != "failed" || first.Attempts != 2 || *first.LastStatusCode != 404 || first.NextAttemptAt != nil ||
			!strings.Contains(*first.LastError, "404") || first.Event != "person.created" || first.Created != "2026-11-21T10:05:00.000Z" {
			t.Fatalf("first delivery %+v", first)
		}
		var detail deliveryView
		env.Get(key, base+"/"+first.ID).Want(200).JSON(&detail)
		if len(detail.AttemptLog) != 2 || *detail.AttemptLog[0].StatusCode != 503 || *detail.AttemptLog[1].StatusCode != 404 ||
			detail.AttemptLog[0].AttemptedAt != "2026-11-21T10:05:00.000Z" || detail.AttemptLog[1].Error != nil {
			t.Fatalf("attempt log %+v", detail.AttemptLog)
		}
		wantNotFound(t, env.Get(otherKey, base+"/"+first.ID), "webhook", hook.ID)
		wantNotFound(t, env.Get(key, base+"/0123456789abcdef0123456789abcdef"), "delivery", "0123456789abcdef0123456789abcdef")
		wantNotFound(t, env.Do(apitest.Request{Method: "POST", Path: base + "/" + first.ID + "/redeliver", Key: otherKey}), "webhook", hook.ID)

		rc.Always(http.StatusOK)
		var queued deliveryView
		env.Do(apitest.Request{Method: "POST", Path: base + "/" + first.ID + "/redeliver", Key: key}).Want(202).JSON(&queued)
		if queued.ID != first.ID || queued.Status != "pending" || queued.NextAttemptAt == nil || queued.Attempts != 2 {
			t.Fatalf("redelivery %+v", queued)
		}
		env.run()
		env.Get(key, base+"/"+first.ID).Want(200).JSON(&detail)
		if detail.Status != "succeeded" || detail.Attempts != 3 || len(detail.AttemptLog) != 3 || detail.LastError != nil {
			t.Fatalf("after redelivery %+v", detail)
		}
		reqs := rc.Requests()
		if got := reqs[len(reqs)-1].Header.Get("Service-Delivery-Id"); got != first.ID {
			t.Fatalf("the redelivery was sent as %s, want %s", got, first.ID)
		}

		// An inactive subscription redelivers nothing.
		env.Patch(key, "/webhooks/"+hook.ID, map[string]any{"is_active": false}).Want(200)
		env.Post(key, base+"/"+first.ID+"/redeliver", nil).Want(409).Problem()
	})
}

// TestDeactivationShowsAndPatchReactivates: a 410 and a failure streak each
// switch a subscription off with their reason; PATCH brings it back.
func TestDeactivationShowsAndPatchReactivates(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		rc := webhooktest.NewReceiver(t)
		rc.Always(http.StatusGone)
		env := newWebhookEnv(t, eng, webhooktest.Settings(rc))
		acc := env.NewAccount()
		key := env.Key(acc)
		hook := createWebhook(env.Env, key, rc.URL, "person.created")
		deliver := func(person string) {
			env.touch(key, person)
			env.Clock.Advance(env.window)
			env.run()
		}
		read := func() webhookView {
			var w webhookView
			env.Get(key, "/webhooks/"+hook.ID).Want(200).JSON(&w)
			return w
		}
		deliver("per_1")
		if w := read(); w.IsActive || *w.DisabledReason != "gone" || !strings.Contains(*w.LastError, "410") {
			t.Fatalf("after 410 %+v", w)
		}
		env.Patch(key, "/webhooks/"+hook.ID, map[string]any{"is_active": true}).Want(200)

		rc.Always(http.StatusBadRequest)
		deliver("per_2")
		env.Clock.Advance(121 * time.Hour)
		deliver("per_3")
		w := read()
		if w.IsActive || *w.DisabledReason != "failures" || !strings.Contains(*w.LastError, "400") {
			t.Fatalf("after a 121 h streak %+v", w)
		}
		deliver("per_4") // nothing is queued while inactive
		if n := listOf[deliveryView](env.Env, key, "/webhooks/"+hook.ID+"/deliveries").Total; n != 3 {
			t.Fatalf("%d deliveries, want 3", n)
		}
		var back webhookView
		env.Patch(key, "/webhooks/"+hook.ID, map[string]any{"is_active": true}).Want(200).JSON(&back)
		if !back.IsActive || back.DisabledReason != nil {
			t.Fatalf("reactivated %+v", back)
		}
		rc.Always(http.StatusNoContent)
		deliver("per_5")
		if w := read(); !w.IsActive || w.LastError != nil {
			t.Fatalf("after a success %+v", w)
		}
		if n := len(rc.Requests()); n != 4 {
			t.Fatalf("receiver got %d requests, want 4", n)
		}
	})
}

// TestDeliveryBodyOnlyForAKeyThatReadsPersons: Get delivery answers the body
// as sent (the person's extended view) only to a key that holds
// persons:read as well as webhooks:read, the body the receiver got; a key
// with webhooks:read alone gets the delivery and its attempts without it.
func TestDeliveryBodyOnlyForAKeyThatReadsPersons(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		rc := webhooktest.NewReceiver(t)
		env := newWebhookEnv(t, eng, webhooktest.Settings(rc))
		acc := env.NewAccount()
		key := env.Key(acc)
		hook := createWebhook(env.Env, key, rc.URL, "person.created")
		env.touch(key, "p1")
		env.Clock.Advance(env.window)
		env.run()
		reqs := rc.Requests()
		if len(reqs) != 1 {
			t.Fatalf("%d deliveries, want 1", len(reqs))
		}
		path := "/webhooks/" + hook.ID + "/deliveries/" + reqs[0].Header.Get("Service-Delivery-Id")
		for _, c := range []struct {
			name   string
			scopes []domain.Scope
			body   bool
		}{
			{"webhooks:read and persons:read", []domain.Scope{domain.ScopeWebhooksRead, domain.ScopePersonsRead}, true},
			{"every scope", domain.AllScopes, true},
			{"webhooks:read alone", []domain.Scope{domain.ScopeWebhooksRead}, false},
			{"webhooks:read with persons:write", []domain.Scope{domain.ScopeWebhooksRead, domain.ScopePersonsWrite}, false},
		} {
			var detail struct {
				ID         string          `json:"id"`
				AttemptLog []any           `json:"attempt_log"`
				Body       json.RawMessage `json:"body"`
			}
			res := env.Get(env.Key(acc, c.scopes...), path).Want(200)
			res.JSON(&detail)
			if len(detail.AttemptLog) != 1 {
				t.Errorf("%s: attempt log %v", c.name, detail.AttemptLog)
			}
			switch {
			case c.body && !jsonEqual(t, detail.Body, reqs[0].Body):
				t.Errorf("%s: body %s, the receiver got %s", c.name, detail.Body, reqs[0].Body)
			case !c.body && (detail.Body != nil || bytes.Contains(res.Body, []byte(`"body"`))):
				t.Errorf("%s: the delivery holds a body: %s", c.name, res.Body)
			}
		}
	})
}

// jsonEqual says whether two JSON texts hold the same value.
func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}
