package console_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/metrics"
	"github.com/pds-dev/pds/internal/ratelimit"
	"github.com/pds-dev/pds/internal/serving"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/internal/webhook"
)

// authReads counts what authenticating a visitor reads from the database:
// keys, sessions and links.
type authReads struct {
	store.Store
	n atomic.Int64
}

func (s *authReads) KeyByHash(ctx context.Context, hash []byte) (*domain.APIKey, error) {
	s.n.Add(1)
	return s.Store.KeyByHash(ctx, hash)
}

func (s *authReads) ConsoleSession(ctx context.Context, idHash []byte, now time.Time) (*domain.ConsoleSession, error) {
	s.n.Add(1)
	return s.Store.ConsoleSession(ctx, idHash, now)
}

func (s *authReads) ConsoleLink(ctx context.Context, tokenHash []byte, now time.Time) (*domain.ConsoleLink, error) {
	s.n.Add(1)
	return s.Store.ConsoleLink(ctx, tokenHash, now)
}

func (s *authReads) TakeConsoleLink(ctx context.Context, tokenHash []byte, now time.Time) (*domain.ConsoleLink, error) {
	s.n.Add(1)
	return s.Store.TakeConsoleLink(ctx, tokenHash, now)
}

// TestFailedSignInsAreThrottled: 1,000 bad console sign-ins from one
// address get the sign-in page's 401 for the address's small budget, then
// 429 with Retry-After, reading nothing; so do a guessed link and a forged
// session cookie, and the API's requests from that address (one budget
// for both faces). The next minute a bad link or session counts again.
func TestFailedSignInsAreThrottled(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		st := &authReads{Store: eng.NewStore(t)}
		m := metrics.New()
		failures := ratelimit.NewFailures(serving.DefaultAuthFailureLimit)
		failures.Observe(m)
		e := newEnvOn(t, st, webhook.Settings{}, failures)
		good, _ := e.key(e.account())
		bad := "pds_AAAAAAAA_" + strings.Repeat("x", 40)
		b := e.browser()

		unauthorized, throttled := 0, 0
		var readsWhenThrottled int64
		for i := range 1000 {
			p := b.post("/console/sign-in", url.Values{"key": {bad}})
			switch p.status {
			case http.StatusUnauthorized:
				if throttled > 0 || !strings.Contains(p.body, `id="key-error"`) {
					t.Fatalf("bad sign-in %d: 401 after a 429, or without the field's error", i+1)
				}
				unauthorized++
			case http.StatusTooManyRequests:
				if throttled == 0 {
					readsWhenThrottled = st.n.Load()
				}
				throttled++
				if wait, err := strconv.Atoi(p.header.Get("Retry-After")); err != nil || wait < 1 || wait > 60 ||
					!strings.Contains(p.body, "failed to authenticate") {
					t.Fatalf("bad sign-in %d: Retry-After %q: %s", i+1, p.header.Get("Retry-After"), p.body)
				}
			default:
				t.Fatalf("bad sign-in %d: %d", i+1, p.status)
			}
		}
		if unauthorized != serving.DefaultAuthFailureLimit || throttled != 1000-unauthorized {
			t.Fatalf("%d answered 401 and %d 429; want %d 401 and the rest 429", unauthorized, throttled, serving.DefaultAuthFailureLimit)
		}
		// The good key too, a guessed link, a forged session, the API.
		if p := b.post("/console/sign-in", url.Values{"key": {good}}); p.status != http.StatusTooManyRequests {
			t.Errorf("a good key from the throttled address: %d", p.status)
		}
		if p := b.get("/console/link/guessed"); p.status != http.StatusTooManyRequests {
			t.Errorf("a guessed link: %d", p.status)
		}
		forged := e.browser()
		consoleURL, _ := url.Parse(e.url + "/console/")
		forged.c.Jar.SetCookies(consoleURL, []*http.Cookie{{Name: "pds_console", Value: "forged", Path: "/console"}})
		if p := forged.get("/console/"); p.status != http.StatusTooManyRequests || p.header.Get("Retry-After") == "" {
			t.Errorf("a forged session cookie: %d", p.status)
		}
		req, _ := http.NewRequest(http.MethodGet, e.url+"/me", nil)
		req.Header.Set("Authorization", "Bearer "+good)
		if p := b.do(req); p.status != http.StatusTooManyRequests {
			t.Errorf("the API from the throttled address: %d", p.status)
		}
		if reads := st.n.Load(); reads != readsWhenThrottled {
			t.Fatalf("the refused requests read the database %d times", reads-readsWhenThrottled)
		}

		// The next minute: a guessed link and a forged session fail again,
		// each counted (and the forged cookie is dropped).
		e.clock.Advance(time.Minute)
		if p := b.get("/console/link/guessed"); p.status != http.StatusNotFound {
			t.Errorf("a guessed link, the next minute: %d", p.status)
		}
		p := forged.get("/console/")
		if p.status != http.StatusSeeOther || !strings.Contains(strings.Join(p.header.Values("Set-Cookie"), ";"), "pds_console=;") {
			t.Errorf("a forged session cookie, the next minute: %d, cookies %q", p.status, p.header.Values("Set-Cookie"))
		}
		b.signIn(good)

		scrape := httptest.NewRecorder()
		m.Handler().ServeHTTP(scrape, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		for _, want := range []string{
			fmt.Sprintf(`pds_auth_failures_total{face="console"} %d`+"\n", serving.DefaultAuthFailureLimit+2),
			fmt.Sprintf(`pds_auth_throttled_total{face="console"} %d`+"\n", throttled+3),
			`pds_auth_throttled_total{face="api"} 1` + "\n",
		} {
			if !strings.Contains(scrape.Body.String(), want) {
				t.Errorf("the metrics do not say %q", strings.TrimSpace(want))
			}
		}
	})
}

// TestSimultaneousBadSignInsSpendOneBudget: 300 bad sign-ins from one
// address at once, each body's last byte held until every request has
// been sent and the server has had time to check it, get at most the
// address's budget of 401s; the rest are 429. A check that only peeks at
// the count lets every one through, since none has failed yet.
func TestSimultaneousBadSignInsSpendOneBudget(t *testing.T) {
	t.Parallel()
	const n = 300
	e := newEnvOn(t, testenv.SQLite.NewStore(t), webhook.Settings{}, nil)
	body := url.Values{"key": {"pds_AAAAAAAA_" + strings.Repeat("x", 40)}}.Encode()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	defer client.CloseIdleConnections()
	var sent sync.WaitGroup
	release := make(chan struct{})
	statuses := make(chan int, n)
	for range n {
		sent.Add(1)
		pr, pw := io.Pipe()
		go func() {
			// The transport reads the body as it sends it: once it has
			// taken all but the last byte, the request is on the wire.
			_, _ = pw.Write([]byte(body[:len(body)-1]))
			sent.Done()
			<-release
			_, _ = pw.Write([]byte(body[len(body)-1:]))
			pw.Close()
		}()
		go func() {
			req, _ := http.NewRequest(http.MethodPost, e.url+"/console/sign-in", pr)
			req.ContentLength = int64(len(body))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			res, err := client.Do(req)
			if err != nil {
				t.Error(err)
				statuses <- 0
				return
			}
			res.Body.Close()
			statuses <- res.StatusCode
		}()
	}
	sent.Wait()
	time.Sleep(500 * time.Millisecond) // for the server to reach every check
	close(release)
	counts := map[int]int{}
	for range n {
		counts[<-statuses]++
	}
	if counts[http.StatusUnauthorized] > serving.DefaultAuthFailureLimit ||
		counts[http.StatusUnauthorized]+counts[http.StatusTooManyRequests] != n {
		t.Fatalf("%d simultaneous bad sign-ins from one address: %d answered 401, %d 429 (statuses %v); want at most %d 401",
			n, counts[http.StatusUnauthorized], counts[http.StatusTooManyRequests], counts, serving.DefaultAuthFailureLimit)
	}
}
