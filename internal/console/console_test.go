package console_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/clock"
	"github.com/pds-dev/pds/internal/console"
	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/instance"
	"github.com/pds-dev/pds/internal/ratelimit"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/serving"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/internal/webhook"
)

var start = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// env is pds serve's handler (the API with the console mounted) on a real
// database.
type env struct {
	t     *testing.T
	st    store.Store
	clock *clock.Fake
	url   string
	hooks webhook.Settings
}

func newEnv(t *testing.T, eng testenv.Engine) *env {
	return newEnvWith(t, eng, webhook.Settings{})
}

// newEnvWith is newEnv with webhook settings (receivers it may reach).
func newEnvWith(t *testing.T, eng testenv.Engine, hooks webhook.Settings) *env {
	t.Helper()
	return newEnvOn(t, eng.NewStore(t), hooks, nil)
}

// newEnvOn is newEnvWith on an open store, with a budget of failed
// authentications the test may observe (nil: a fresh one); the API and the
// console share it, as in pds serve.
func newEnvOn(t *testing.T, st store.Store, hooks webhook.Settings, failures *ratelimit.Failures) *env {
	t.Helper()
	clk := clock.NewFake(start)
	lim := ratelimit.NewMemory()
	log := slog.New(slog.DiscardHandler)
	if failures == nil {
		failures = ratelimit.NewFailures(serving.DefaultAuthFailureLimit)
	}
	shared := serving.Settings{PublicURL: "https://pds.test", Webhook: hooks, WebhookWindow: time.Minute, AuthFailures: failures}
	api := instance.New(instance.Parts{Settings: shared, Store: st, Clock: clk, Limiter: lim, Log: log})
	hs := httptest.NewServer(api.Handler())
	t.Cleanup(hs.Close)
	return &env{t: t, st: st, clock: clk, url: hs.URL, hooks: hooks}
}

func (e *env) account() string {
	e.t.Helper()
	id := domain.NewID("acc")
	if err := e.st.CreateAccount(context.Background(), domain.Account{ID: id, Name: "test", CreatedAt: start}); err != nil {
		e.t.Fatal(err)
	}
	return id
}

func (e *env) key(account string, scopes ...domain.Scope) (string, domain.APIKey) {
	e.t.Helper()
	if len(scopes) == 0 {
		scopes = domain.AllScopes
	}
	k, full, err := service.MintKey(context.Background(), e.st, service.KeyRequest{AccountID: account, Scopes: scopes}, e.clock.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	return full, k
}

// browser is a client with its own cookies, as a browser keeps them.
type browser struct {
	e *env
	c *http.Client
}

func (e *env) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{e: e, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

type page struct {
	status   int
	location string
	header   http.Header
	body     string
}

func (b *browser) do(req *http.Request) page {
	b.e.t.Helper()
	res, err := b.c.Do(req)
	if err != nil {
		b.e.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return page{status: res.StatusCode, location: res.Header.Get("Location"), header: res.Header, body: string(raw)}
}

func (b *browser) get(path string) page {
	req, _ := http.NewRequest("GET", b.e.url+path, nil)
	return b.do(req)
}

// post sends a form as a console page of the server would.
func (b *browser) post(path string, form url.Values, header ...string) page {
	req, _ := http.NewRequest("POST", b.e.url+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return b.do(req)
}

func (b *browser) signIn(key string) {
	b.e.t.Helper()
	p := b.post("/console/sign-in", url.Values{"key": {key}})
	if p.status != http.StatusSeeOther || p.location != "/console/" {
		b.e.t.Fatalf("sign in: %d to %q: %s", p.status, p.location, p.body)
	}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf is the form token of the page at path.
func (b *browser) csrf(path string) string {
	b.e.t.Helper()
	m := csrfField.FindStringSubmatch(b.get(path).body)
	if m == nil {
		b.e.t.Fatalf("no form token on %s", path)
	}
	return m[1]
}

func TestSessionActsAsItsKey(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		e := newEnv(t, eng)
		acc := e.account()
		full, key := e.key(acc)

		b := e.browser()
		if p := b.get("/console/"); p.status != http.StatusSeeOther || p.location != "/console/sign-in" {
			t.Fatalf("a page without a session: %d to %q", p.status, p.location)
		}
		if p := b.post("/console/sign-in", url.Values{"key": {full + "x"}}); p.status != http.StatusUnauthorized ||
			!strings.Contains(p.body, "The API key is not valid.") || !strings.Contains(p.body, `id="key-error"`) {
			t.Fatalf("a wrong key: %d %s", p.status, p.body)
		}
		p := b.post("/console/sign-in", url.Values{"key": {full}})
		cookie := p.header.Get("Set-Cookie")
		for _, want := range []string{"pds_console=", "Path=/console", "HttpOnly", "SameSite=Strict"} {
			if !strings.Contains(cookie, want) {
				t.Errorf("session cookie %q lacks %s", cookie, want)
			}
		}
		if strings.Contains(cookie, full) || strings.Contains(cookie, strings.TrimPrefix(key.Prefix, "pds_")) {
			t.Errorf("the session cookie holds the key: %q", cookie)
		}
		home := b.get("/console/")
		if home.status != 200 || !strings.Contains(home.body, acc) || !strings.Contains(home.body, key.Prefix) {
			t.Fatalf("overview: %d %s", home.status, home.body)
		}
		if csp := home.header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || strings.Contains(csp, "script-src") {
			t.Errorf("Content-Security-Policy %q", csp)
		}

		// Signing out ends the session: its cookie opens nothing any more.
		consoleURL, _ := url.Parse(e.url + "/console/")
		kept := b.c.Jar.Cookies(consoleURL)
		if p := b.post("/console/sign-out", url.Values{"csrf": {b.csrf("/console/")}}); p.status != http.StatusSeeOther {
			t.Fatalf("sign out: %d", p.status)
		}
		stale := e.browser()
		stale.c.Jar.SetCookies(consoleURL, kept)
		if p := stale.get("/console/"); p.status != http.StatusSeeOther {
			t.Fatalf("the ended session's cookie: %d", p.status)
		}

		// A key revoked meanwhile ends its session on the next page.
		b.signIn(full)
		if _, err := e.st.RevokeKey(context.Background(), key.ID, e.clock.Now()); err != nil {
			t.Fatal(err)
		}
		if p := b.get("/console/persons"); p.status != http.StatusSeeOther || p.location != "/console/sign-in?ended=revoked" {
			t.Fatalf("after revocation: %d to %q", p.status, p.location)
		}
		if p := b.get("/console/sign-in?ended=revoked"); !strings.Contains(p.body, "has been revoked") {
			t.Fatalf("the sign-in page does not say why: %s", p.body)
		}
	})
}

func TestSessionExpires(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testenv.SQLite)
	full, _ := e.key(e.account())
	b := e.browser()
	b.signIn(full)
	e.clock.Advance(8*time.Hour + time.Second)
	if p := b.get("/console/"); p.status != http.StatusSeeOther || p.location != "/console/sign-in" {
		t.Fatalf("after the session's life: %d to %q", p.status, p.location)
	}
}

func TestReadOnlyKeyIsOfferedAndAllowedOnlyReads(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		e := newEnv(t, eng)
		acc := e.account()
		writer, _ := e.key(acc)
		reader, _ := e.key(acc, domain.ScopePersonsRead, domain.ScopeTagsRead)
		p, _, err := e.st.UpsertPerson(context.Background(), acc, domain.PersonUpsert{
			Email: domain.Opt[string]{Set: true, Value: "ada@example.com"}}, store.Write{Now: e.clock.Now(), Window: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		w := e.browser()
		w.signIn(writer)
		if body := w.get("/console/persons/" + p.ID).body; !strings.Contains(body, `id="edit-heading"`) {
			t.Fatal("a writing key sees no edit form")
		}

		r := e.browser()
		r.signIn(reader)
		view := r.get("/console/persons/" + p.ID)
		if view.status != 200 || strings.Contains(view.body, `id="edit-heading"`) || strings.Contains(view.body, "Attach") {
			t.Fatalf("a reading key's person page: %d, with edit controls", view.status)
		}
		if tags := r.get("/console/tags").body; strings.Contains(tags, "New tag") {
			t.Fatal("a reading key is offered to create tags")
		}
		if nav := view.body; strings.Contains(nav, "/console/webhooks") {
			t.Fatal("a key without webhooks:read is offered the webhooks")
		}
		// A forged post, with the session's own token, is the API's 403.
		token := r.csrf("/console/persons/" + p.ID)
		forged := r.post("/console/persons/"+p.ID, url.Values{"csrf": {token}, "first_name": {"Mallory"}})
		if forged.status != http.StatusForbidden || !strings.Contains(forged.body, "lacks the scope persons:write") {
			t.Fatalf("a forged edit: %d %s", forged.status, forged.body)
		}
		if got, _ := e.st.GetPerson(context.Background(), acc, p.ID); got.FirstName != nil {
			t.Fatal("the forged edit changed the person")
		}
		if page := r.get("/console/custom-fields"); page.status != http.StatusForbidden {
			t.Fatalf("a page the key may not read: %d", page.status)
		}
	})
}

func TestAnotherAccountsIDsAreAbsent(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		e := newEnv(t, eng)
		a, b := e.account(), e.account()
		p, _, err := e.st.UpsertPerson(context.Background(), a, domain.PersonUpsert{
			Email: domain.Opt[string]{Set: true, Value: "ada@example.com"}}, store.Write{Now: e.clock.Now(), Window: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		keyB, _ := e.key(b)
		br := e.browser()
		br.signIn(keyB)
		foreign := br.get("/console/persons/" + p.ID)
		absent := br.get("/console/persons/per_0000000000000000000000")
		strip := regexp.MustCompile(`req_[0-9a-f]+|per_[0-9a-f]+`)
		if foreign.status != http.StatusNotFound || strip.ReplaceAllString(foreign.body, "") != strip.ReplaceAllString(absent.body, "") {
			t.Fatalf("another account's person: %d, not the page of an absent id", foreign.status)
		}
		if strings.Contains(foreign.body, "ada@example.com") {
			t.Fatal("another account's person shows")
		}
		// Nor A's subscription, nor a delivery of it.
		now := e.clock.Now()
		hook := domain.Webhook{ID: domain.NewID("wh"), AccountID: a, Name: "A's", TargetURL: "https://a.example/hook",
			Events: domain.WebhookEvents, IsActive: true, Secret: "whsec_a", SecretVersion: 1, CreatedAt: now, UpdatedAt: now}
		if err := e.st.CreateWebhook(context.Background(), hook); err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{"/console/webhooks/" + hook.ID, "/console/webhooks/" + hook.ID + "/deliveries/0123456789abcdef0123456789abcdef"} {
			foreign, absent := br.get(path), br.get(strings.Replace(path, hook.ID, "wh_0000000000000000000000", 1))
			strip := regexp.MustCompile(`req_[0-9a-f]+|wh_[0-9a-f]+`)
			if foreign.status != http.StatusNotFound || strip.ReplaceAllString(foreign.body, "") != strip.ReplaceAllString(absent.body, "") {
				t.Fatalf("%s of another account: %d, not the page of an absent id", path, foreign.status)
			}
		}
		// Nor may a form of B's session change A's person.
		token := br.csrf("/console/")
		if p := br.post("/console/persons/"+p.ID, url.Values{"csrf": {token}, "first_name": {"Eve"}}); p.status != http.StatusNotFound {
			t.Fatalf("editing another account's person: %d", p.status)
		}
	})
}

func TestFormsFromElsewhereAreRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testenv.SQLite)
	acc := e.account()
	full, _ := e.key(acc)
	b := e.browser()
	b.signIn(full)
	token := b.csrf("/console/tags")
	for _, c := range []struct {
		name   string
		form   url.Values
		header []string
	}{
		{"no token", url.Values{"name": {"x1"}, "context": {"person"}}, nil},
		{"another token", url.Values{"csrf": {"forged"}, "name": {"x2"}, "context": {"person"}}, nil},
		{"another site (Sec-Fetch-Site)", url.Values{"csrf": {token}, "name": {"x3"}, "context": {"person"}}, []string{"Sec-Fetch-Site", "cross-site"}},
		{"another site (Origin)", url.Values{"csrf": {token}, "name": {"x4"}, "context": {"person"}}, []string{"Origin", "https://evil.example"}},
	} {
		if p := b.post("/console/tags", c.form, c.header...); p.status != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", c.name, p.status)
		}
	}
	if p := b.post("/console/tags", url.Values{"csrf": {token}, "name": {"kept"}, "context": {"person"}}, "Sec-Fetch-Site", "same-origin"); p.status != http.StatusSeeOther {
		t.Fatalf("the console's own form: %d %s", p.status, p.body)
	}
	tags, _, err := e.st.ListTags(context.Background(), acc, nil, domain.PageRequest{Page: 1, Size: 10})
	if err != nil || len(tags) != 1 || tags[0].Name != "kept" {
		t.Fatalf("tags made: %+v, %v; want only the console's own form's", tags, err)
	}
}

// TestLinkSignsInOnceWhenAsked: a one-time link shows a page that says
// which account and key it signs in as, with a button; fetching it (a mail
// scanner, a chat preview, by GET or HEAD) spends nothing and starts no
// session. Only the button's post, from the link's own page, spends it
// and signs in; a post from another site (which would sign a visitor into
// the link's account) or without the page's confirmation is refused and
// leaves the link as it was.
func TestLinkSignsInOnceWhenAsked(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		e := newEnv(t, eng)
		acc := e.account()
		_, key := e.key(acc)
		path, err := console.MintLink(context.Background(), e.st, acc, key.Hash, e.clock.Now(), 10*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		noSession := func(method string, p page) {
			t.Helper()
			for _, c := range p.header.Values("Set-Cookie") {
				if strings.HasPrefix(c, "pds_console=") {
					t.Fatalf("%s of the link started a session: %q", method, c)
				}
			}
		}
		scanner := e.browser()
		for range 2 {
			head, _ := http.NewRequest(http.MethodHead, e.url+path, nil)
			p := scanner.do(head)
			if p.status != http.StatusOK {
				t.Fatalf("HEAD of the link: %d", p.status)
			}
			noSession("HEAD", p)
			p = scanner.get(path)
			if p.status != http.StatusOK || !strings.Contains(p.body, acc) || !strings.Contains(p.body, key.Prefix) ||
				!strings.Contains(p.body, `method="post"`) {
				t.Fatalf("GET of the link: %d %s", p.status, p.body)
			}
			noSession("GET", p)
		}
		if p := scanner.get("/console/"); p.status != http.StatusSeeOther {
			t.Fatalf("after fetching the link, a page: %d, want the way to sign in", p.status)
		}

		b := e.browser()
		confirm := regexp.MustCompile(`name="confirm" value="([^"]+)"`).FindStringSubmatch(b.get(path).body)
		if confirm == nil {
			t.Fatal("the link's page has no confirmation in its form")
		}
		for _, c := range []struct {
			name   string
			form   url.Values
			header []string
		}{
			{"another site (Sec-Fetch-Site)", url.Values{"confirm": {confirm[1]}}, []string{"Sec-Fetch-Site", "cross-site"}},
			{"another site (Origin)", url.Values{"confirm": {confirm[1]}}, []string{"Origin", "https://evil.example"}},
			{"no confirmation", url.Values{}, nil},
			{"another confirmation", url.Values{"confirm": {"forged"}}, nil},
		} {
			if p := b.post(path, c.form, c.header...); p.status != http.StatusForbidden {
				t.Errorf("%s: %d, want 403", c.name, p.status)
			}
		}
		// Nor from a browser that never showed the page (no confirmation
		// cookie), however it got the value.
		if p := e.browser().post(path, url.Values{"confirm": {confirm[1]}}); p.status != http.StatusForbidden {
			t.Errorf("a post without the page's cookie: %d, want 403", p.status)
		}
		if p := b.get("/console/"); p.status != http.StatusSeeOther {
			t.Fatalf("a refused post started a session: %d", p.status)
		}

		p := b.post(path, url.Values{"confirm": {confirm[1]}}, "Sec-Fetch-Site", "same-origin", "Origin", e.url)
		if p.status != http.StatusSeeOther || p.location != "/console/" {
			t.Fatalf("signing in with the link: %d to %q: %s", p.status, p.location, p.body)
		}
		if p := b.get("/console/"); p.status != 200 {
			t.Fatalf("the link's session: %d", p.status)
		}
		if p := e.browser().get(path); p.status != http.StatusNotFound {
			t.Fatalf("the link fetched after it signed in: %d", p.status)
		}
		if p := b.post(path, url.Values{"confirm": {confirm[1]}}); p.status != http.StatusNotFound {
			t.Fatalf("the link posted again: %d", p.status)
		}
	})
}
