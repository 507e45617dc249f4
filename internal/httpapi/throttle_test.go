package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/httpapi/apitest"
	"github.com/pds-dev/pds/internal/metrics"
	"github.com/pds-dev/pds/internal/ratelimit"
	"github.com/pds-dev/pds/internal/serving"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/testenv"
)

// keyReads counts the key lookups authentication makes in the database.
type keyReads struct {
	store.Store
	n atomic.Int64
}

func (s *keyReads) KeyByHash(ctx context.Context, hash []byte) (*domain.APIKey, error) {
	s.n.Add(1)
	return s.Store.KeyByHash(ctx, hash)
}

// TestFailedAuthenticationsAreThrottled: 1,000 bad keys from one address
// get 401 for the address's small budget of failures a minute, then 429
// with Retry-After, without a database read each; so does a good key from
// that address until the minute ends (the server cannot tell a good key
// from a bad one without reading it). Both are counted in the metrics.
// Another address, and the next minute, start afresh.
func TestFailedAuthenticationsAreThrottled(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		st := &keyReads{Store: eng.NewStore(t)}
		m := metrics.New()
		cfg := apitest.DefaultConfig()
		cfg.AuthFailures = ratelimit.NewFailures(serving.DefaultAuthFailureLimit)
		cfg.AuthFailures.Observe(m)
		env := apitest.NewOn(t, st, apitest.WithConfig(cfg))
		good := env.Key(env.NewAccount())
		bad := "pds_AAAAAAAA_" + strings.Repeat("x", 40)

		unauthorized, throttled := 0, 0
		var readsWhenThrottled int64
		for i := range 1000 {
			res := env.Do(apitest.Request{Method: http.MethodGet, Path: "/persons", Key: bad})
			switch res.Status {
			case http.StatusUnauthorized:
				if throttled > 0 {
					t.Fatalf("bad key %d: 401 after a 429", i+1)
				}
				unauthorized++
			case http.StatusTooManyRequests:
				if throttled == 0 {
					readsWhenThrottled = st.n.Load()
				}
				throttled++
				p := res.Problem()
				wait, err := strconv.Atoi(res.Header.Get("Retry-After"))
				if err != nil || wait < 1 || wait > 60 || !strings.Contains(p.Detail, "failed to authenticate") {
					t.Fatalf("bad key %d: Retry-After %q, %+v", i+1, res.Header.Get("Retry-After"), p)
				}
			default:
				t.Fatalf("bad key %d: %d", i+1, res.Status)
			}
		}
		if unauthorized != serving.DefaultAuthFailureLimit || throttled != 1000-unauthorized {
			t.Fatalf("%d answered 401 and %d 429; want %d 401 and the rest 429", unauthorized, throttled, serving.DefaultAuthFailureLimit)
		}
		if reads := st.n.Load(); reads != readsWhenThrottled {
			t.Fatalf("the refused requests read the database %d times", reads-readsWhenThrottled)
		}
		if res := env.Get(good, "/me"); res.Status != http.StatusTooManyRequests {
			t.Fatalf("a good key from the throttled address: %d", res.Status)
		}
		scrape := httptest.NewRecorder()
		m.Handler().ServeHTTP(scrape, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		for _, want := range []string{
			fmt.Sprintf(`pds_auth_failures_total{face="api"} %d`+"\n", serving.DefaultAuthFailureLimit),
			fmt.Sprintf(`pds_auth_throttled_total{face="api"} %d`+"\n", throttled+1),
		} {
			if !strings.Contains(scrape.Body.String(), want) {
				t.Errorf("the metrics do not say %q", strings.TrimSpace(want))
			}
		}

		env.Clock.Advance(time.Minute)
		env.Get(good, "/me").Want(http.StatusOK)
		env.Do(apitest.Request{Method: http.MethodGet, Path: "/persons", Key: bad}).Want(http.StatusUnauthorized)
	})
}

// TestThrottledAddressIsTheConnectionsUnlessAHeaderIsTrusted: by default
// the address is the connection's peer, whatever X-Forwarded-For a client
// sends; a server told to trust a header takes the address its proxy
// appended last, so that clients behind the proxy have budgets of their
// own and a client cannot pick its budget by what it sends.
func TestThrottledAddressIsTheConnectionsUnlessAHeaderIsTrusted(t *testing.T) {
	t.Parallel()
	bad := "pds_AAAAAAAA_" + strings.Repeat("x", 40)
	from := func(env *apitest.Env, xff string) int {
		return env.Do(apitest.Request{Method: http.MethodGet, Path: "/me", Key: bad,
			Header: http.Header{"X-Forwarded-For": {xff}}}).Status
	}
	t.Run("untrusted by default", func(t *testing.T) {
		t.Parallel()
		env := apitest.New(t, testenv.SQLite)
		for i := range serving.DefaultAuthFailureLimit {
			if got := from(env, "198.51.100."+strconv.Itoa(i)); got != http.StatusUnauthorized {
				t.Fatalf("failure %d: %d", i+1, got)
			}
		}
		if got := from(env, "203.0.113.9"); got != http.StatusTooManyRequests {
			t.Fatalf("a new X-Forwarded-For from the same connection's address: %d, want 429", got)
		}
	})
	t.Run("trusted", func(t *testing.T) {
		t.Parallel()
		cfg := apitest.DefaultConfig()
		cfg.ClientAddressHeader = "X-Forwarded-For"
		env := apitest.New(t, testenv.SQLite, apitest.WithConfig(cfg))
		for i := range serving.DefaultAuthFailureLimit {
			// What the client sent comes first; the proxy appends the
			// address it saw.
			if got := from(env, "10.0.0."+strconv.Itoa(i)+", 198.51.100.7"); got != http.StatusUnauthorized {
				t.Fatalf("failure %d: %d", i+1, got)
			}
		}
		if got := from(env, "10.9.9.9, 198.51.100.7"); got != http.StatusTooManyRequests {
			t.Fatalf("the same client behind the proxy: %d, want 429", got)
		}
		if got := from(env, "198.51.100.8"); got != http.StatusUnauthorized {
			t.Fatalf("another client behind the proxy: %d, want 401", got)
		}
	})
}

// keyReadsHeld holds every key lookup until want lookups have started or
// the wait runs out, so that every request under way has passed the
// throttle's check before any of them fails.
type keyReadsHeld struct {
	store.Store
	want    int64
	started atomic.Int64
	all     chan struct{}
	wait    time.Duration
}

func (s *keyReadsHeld) KeyByHash(ctx context.Context, hash []byte) (*domain.APIKey, error) {
	if s.started.Add(1) == s.want {
		close(s.all)
	}
	select {
	case <-s.all:
	case <-time.After(s.wait):
	}
	return s.Store.KeyByHash(ctx, hash)
}

// TestSimultaneousBadKeysSpendOneBudget: 300 bad keys from one address at
// once, each key's lookup held until all 300 have started (or a second has
// passed), get at most the address's budget of 401s; the rest are 429.
// A check that only peeks at the count lets every one of them through,
// since none has failed yet when the others are checked.
func TestSimultaneousBadKeysSpendOneBudget(t *testing.T) {
	t.Parallel()
	const n = 300
	st := &keyReadsHeld{Store: testenv.SQLite.NewStore(t), want: n, all: make(chan struct{}), wait: time.Second}
	env := apitest.NewOn(t, st)
	bad := "pds_AAAAAAAA_" + strings.Repeat("x", 40)
	statuses := make(chan int, n)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	defer client.CloseIdleConnections()
	for range n {
		go func() {
			req, _ := http.NewRequest(http.MethodGet, env.HTTP.URL+"/persons", nil)
			req.Header.Set("Authorization", "Bearer "+bad)
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
	counts := map[int]int{}
	for range n {
		counts[<-statuses]++
	}
	if counts[http.StatusUnauthorized] > serving.DefaultAuthFailureLimit ||
		counts[http.StatusUnauthorized]+counts[http.StatusTooManyRequests] != n {
		t.Fatalf("%d simultaneous bad keys from one address: %d answered 401, %d 429 (statuses %v); want at most %d 401",
			n, counts[http.StatusUnauthorized], counts[http.StatusTooManyRequests], counts, serving.DefaultAuthFailureLimit)
	}
}

// TestSimultaneousGoodKeysAreServed: 64 requests with a good key from one
// address at once, each key lookup held until all have started, are all
// served: the budget of failures is spent by failures alone, however many
// requests of a client are under way.
func TestSimultaneousGoodKeysAreServed(t *testing.T) {
	t.Parallel()
	const n = 64
	st := &keyReadsHeld{Store: testenv.SQLite.NewStore(t), want: n, all: make(chan struct{}), wait: 2 * time.Second}
	env := apitest.NewOn(t, st)
	good := env.Key(env.NewAccount())
	st.started.Store(0) // the key minted above was not a lookup of these requests
	statuses := make(chan int, n)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	defer client.CloseIdleConnections()
	for range n {
		go func() {
			req, _ := http.NewRequest(http.MethodGet, env.HTTP.URL+"/me", nil)
			req.Header.Set("Authorization", "Bearer "+good)
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
	counts := map[int]int{}
	for range n {
		counts[<-statuses]++
	}
	if counts[http.StatusOK] != n {
		t.Fatalf("%d simultaneous requests with a good key from one address: statuses %v", n, counts)
	}
}
