package webhook_test

import (
	"net/http"
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
