package webhook_test

import (
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/webhook"
)

// TestDefaultsAndClient: the defaults of decisions.md section 8 (ten
// attempts, 5 s to connect, 15 s in all, deactivation after 5 days) and a
// client that never uses a proxy (which would dial past the guard) nor
// follows a redirect. It sets HTTPS_PROXY, so it is not parallel.
func TestDefaultsAndClient(t *testing.T) {
	s := webhook.Settings{}.WithDefaults()
	if len(s.Schedule) != 10 || s.ConnectTimeout != 5*time.Second || s.Timeout != 15*time.Second || s.DisableAfter != 120*time.Hour {
		t.Fatalf("defaults %+v", s)
	}
	if g := s.Guard(); g.ConnectTimeout != 5*time.Second || g.AllowPrivate {
		t.Fatalf("guard %+v", g)
	}
	t.Setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
	c, err := webhook.NewClient(webhook.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	tr, ok := c.Transport.(*http.Transport)
	if !ok || tr.Proxy != nil || tr.DialContext == nil || c.Timeout != 15*time.Second {
		t.Fatalf("client %+v / transport %+v", c, c.Transport)
	}
	if err := c.CheckRedirect(nil, nil); err != http.ErrUseLastResponse {
		t.Fatalf("redirect policy %v", err)
	}
}

// TestAttemptsSpeakHTTP1WithKeepAlive: a receiver that offers HTTP/2 is
// still sent HTTP/1.1, over connections kept between attempts (one per
// attempt in flight, rather than every attempt multiplexed on one).
func TestAttemptsSpeakHTTP1WithKeepAlive(t *testing.T) {
	var mu sync.Mutex
	protos, conns := map[string]int{}, map[string]bool{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		protos[r.Proto]++
		conns[r.RemoteAddr] = true
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	client, err := webhook.NewClient(webhook.Settings{AllowPrivate: true, ExtraCAs: []*x509.Certificate{srv.Certificate()}})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		res, err := client.Post(srv.URL, "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	if protos["HTTP/1.1"] != 10 || len(conns) != 1 {
		t.Fatalf("protocols %v over %d connections; want HTTP/1.1 over one kept alive", protos, len(conns))
	}
}
