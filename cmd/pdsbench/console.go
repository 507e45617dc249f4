package main

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// The console rows (--rows console): the console's pages of the seeded
// account, one after another, each a page a person opens, signed in as the
// seed's key. Their latency is the server's time to answer, with the
// loopback round trip.
func init() { rowGroups["console"] = (*measure).consoleRows }

func (m *measure) consoleRows() {
	cookie, err := m.consoleSession()
	if err != nil {
		m.fail("console: sign in: %v", err)
		return
	}
	hook, err := m.consoleSubscription()
	if err != nil {
		m.fail("console: a subscription: %v", err)
		return
	}
	last := max(1, (m.fx.persons+pageSize-1)/pageSize)
	pages := []struct{ name, path string }{
		{"overview", "/console/"},
		{"persons seen within 30 days, page 1", "/console/persons"},
		{"persons seen within 30 days, the last page (" + fmt.Sprint(last) + ")", fmt.Sprintf("/console/persons?page=%d", last)},
		{"persons holding tags A and B, page 1", "/console/persons?tag_ids=" + m.fx.tagA + "&tag_ids=" + m.fx.tagB},
		{"a person, with its breadcrumbs", ""},
		{"tags", "/console/tags"},
		{"webhooks", "/console/webhooks"},
		{"a subscription, with its delivery log", "/console/webhooks/" + hook},
	}
	for _, p := range pages {
		next := get(p.path)
		if p.path == "" {
			ids := m.fx.samplePerson
			next = func(i int) request {
				return request{method: http.MethodGet, path: "/console/persons/" + ids[i%len(ids)], want: http.StatusOK}
			}
		}
		m.consoleRow("C. Console: "+p.name, cookie, next)
	}
}

// consoleRow is a latency row of console pages, sent with the session's
// cookie.
func (m *measure) consoleRow(name, cookie string, next func(int) request) {
	m.logf("%s", name)
	res := load{client: newClient(1), base: m.base, cookie: cookie, conns: 1, count: m.c.requests, timeout: m.c.duration,
		next: next, check: func(_ int, body []byte) error {
			if !strings.Contains(string(body), "<main id=\"main\">") {
				return errors.New("not a console page")
			}
			return nil
		}}.run(m.ctx)
	note := "target < 100 ms"
	if res.errors > 0 {
		m.fail("%s: %d of %d requests failed; first: %v", name, res.errors, res.errors+res.n(), res.firstErr)
		note += fmt.Sprintf(" **%d failed**", res.errors)
	}
	m.rows = append(m.rows, row{engine: m.engine, name: name, n: res.n(), p50: res.p50(), p99: res.p99(),
		throughput: fmt.Sprintf("%.0f req/s", res.perSecond()), note: note})
}

// consoleSession signs in with the seed's key, as a person does, and
// returns the session's cookie.
func (m *measure) consoleSession() (string, error) {
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(m.ctx, http.MethodPost, m.base+"/console/sign-in",
		strings.NewReader(url.Values{"key": {m.fx.key}}.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := c.Do(req)
	if err != nil {
		return "", err
	}
	res.Body.Close()
	for _, ck := range res.Cookies() {
		if ck.Name == "pds_console" {
			return ck.Name + "=" + ck.Value, nil
		}
	}
	return "", fmt.Errorf("sign-in answered %d without a session", res.StatusCode)
}

// consoleSubscription gives the account a subscription, through the store
// (setup; the server's guard would resolve its target), so that the
// webhook pages have one to show. It is inactive: pds serve's worker
// would otherwise deliver the other rows' changes to it, in the background
// of the rows after these.
func (m *measure) consoleSubscription() (string, error) {
	now := time.Now().UTC()
	hook := domain.Webhook{ID: domain.NewID("wh"), AccountID: m.fx.account, Name: "pdsbench", TargetURL: "https://receiver.invalid/hook",
		Events: domain.WebhookEvents, IsActive: false, Secret: "whsec_pdsbench", SecretVersion: 1, CreatedAt: now, UpdatedAt: now}
	return hook.ID, m.setup(func(st store.Store) error { return st.CreateWebhook(m.ctx, hook) })
}
