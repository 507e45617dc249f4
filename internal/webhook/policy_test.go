package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/webhook"
)

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

var _ net.Error = timeoutErr{}

func TestDecide(t *testing.T) {
	t.Parallel()
	s := webhook.Settings{Jitter: func(d time.Duration) time.Duration { return d }}.WithDefaults()
	fresh := domain.Delivery{}
	for _, c := range []struct {
		code    int
		err     error
		status  string
		gone    bool
		errLike string
	}{
		{200, nil, domain.DeliverySucceeded, false, ""},
		{204, nil, domain.DeliverySucceeded, false, ""},
		{299, nil, domain.DeliverySucceeded, false, ""},
		{301, nil, domain.DeliveryFailed, false, "HTTP 301 Moved Permanently: redirects are not followed"},
		{307, nil, domain.DeliveryFailed, false, "not retried"},
		{400, nil, domain.DeliveryFailed, false, "HTTP 400 Bad Request: not retried"},
		{404, nil, domain.DeliveryFailed, false, "HTTP 404"},
		{408, nil, domain.DeliveryFailed, false, "HTTP 408 Request Timeout: not retried"},
		{429, nil, domain.DeliveryFailed, false, "HTTP 429 Too Many Requests: not retried"},
		{410, nil, domain.DeliveryFailed, true, "HTTP 410 Gone"},
		{500, nil, domain.DeliveryPending, false, "HTTP 500 Internal Server Error"},
		{503, nil, domain.DeliveryPending, false, "HTTP 503"},
		{0, timeoutErr{}, domain.DeliveryPending, false, "timeout: no complete response within 15s"},
		{0, context.DeadlineExceeded, domain.DeliveryPending, false, "timeout"},
		{0, errors.New("dial tcp: connection refused"), domain.DeliveryPending, false, "connection failed: dial tcp: connection refused"},
	} {
		r := s.Decide(fresh, c.code, c.err, t0)
		if r.Status != c.status || r.Gone != c.gone || (c.errLike == "") != (r.Error == nil) ||
			(r.Error != nil && !strings.Contains(*r.Error, c.errLike)) {
			t.Errorf("%d %v: %+v (error %v), want %s gone=%v error like %q", c.code, c.err, r, deref(r.Error), c.status, c.gone, c.errLike)
		}
		if (c.err == nil) != (r.Attempt.StatusCode != nil) || (c.err != nil) != (r.Attempt.Error != nil) {
			t.Errorf("%d %v: the attempt records status %v error %v", c.code, c.err, r.Attempt.StatusCode, deref(r.Attempt.Error))
		}
		if c.status == domain.DeliveryPending && (r.NextAttemptAt == nil || !r.NextAttemptAt.Equal(t0.Add(5*time.Second))) {
			t.Errorf("%d %v: next attempt %v, want after 5s", c.code, c.err, r.NextAttemptAt)
		}
	}

	t.Run("each retry waits its own delay; the tenth failure gives up", func(t *testing.T) {
		for n := 0; n < len(webhook.DefaultSchedule); n++ {
			d := domain.Delivery{Attempts: n + 3, RoundStart: 3} // a redelivered delivery: its round restarted
			r := s.Decide(d, 503, nil, t0)
			if n == len(webhook.DefaultSchedule)-1 {
				if r.Status != domain.DeliveryFailed || !strings.Contains(*r.Error, "gave up after 10 attempts") {
					t.Fatalf("attempt 10: %+v", r)
				}
				continue
			}
			if r.Status != domain.DeliveryPending || !r.NextAttemptAt.Equal(t0.Add(webhook.DefaultSchedule[n+1])) {
				t.Fatalf("after attempt %d: %+v, want a retry after %s", n+1, r, webhook.DefaultSchedule[n+1])
			}
		}
	})

	t.Run("deactivation needs the span and two deliveries", func(t *testing.T) {
		r := s.Decide(fresh, 404, nil, t0)
		for _, c := range []struct {
			start    time.Time
			failures int
			want     bool
		}{
			{t0.Add(-120 * time.Hour), 2, true},
			{t0.Add(-200 * time.Hour), 1, false},
			{t0.Add(-119 * time.Hour), 5, false},
			{t0, 2, false},
		} {
			if got := r.Deactivate(c.start, c.failures); got != c.want {
				t.Errorf("streak from %s with %d failures: %v, want %v", t0.Sub(c.start), c.failures, got, c.want)
			}
		}
	})
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func TestDefaultJitterStaysWithinTenPercent(t *testing.T) {
	t.Parallel()
	s := webhook.Settings{}.WithDefaults()
	d := domain.Delivery{Attempts: 3}
	seen := map[time.Duration]bool{}
	for range 200 {
		r := s.Decide(d, 500, nil, t0)
		delay := r.NextAttemptAt.Sub(t0)
		if delay < 2*time.Hour || delay > 2*time.Hour+12*time.Minute {
			t.Fatalf("a 2h retry with jitter waits %s", delay)
		}
		seen[delay] = true
	}
	if len(seen) < 2 {
		t.Fatal("jitter never varies the delay")
	}
	if r := s.Decide(domain.Delivery{}, 500, nil, t0); !r.NextAttemptAt.After(t0.Add(5*time.Second-1)) || r.NextAttemptAt.After(t0.Add(5500*time.Millisecond)) {
		t.Fatalf("5s retry at %s", r.NextAttemptAt.Sub(t0))
	}
}

func TestParseSchedule(t *testing.T) {
	t.Parallel()
	got, err := webhook.ParseSchedule("0s,5s,5m,30m,2h,5h,10h,14h,20h,24h")
	if err != nil || !slices.Equal(got, webhook.DefaultSchedule) {
		t.Fatalf("default schedule: %v, %v", got, err)
	}
	if got, err := webhook.ParseSchedule(" 1s , 2m "); err != nil || !slices.Equal(got, []time.Duration{time.Second, 2 * time.Minute}) {
		t.Fatalf("spaces: %v, %v", got, err)
	}
	for _, bad := range []string{"", "5s,,5m", "soon", "5s,-1s", strings.Repeat("1s,", 50) + "1s"} {
		if _, err := webhook.ParseSchedule(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestLastAttemptBy(t *testing.T) {
	t.Parallel()
	s := webhook.Settings{Schedule: []time.Duration{0, 10 * time.Second, 100 * time.Second}}
	if got := s.LastAttemptBy(nil, t0); !got.Equal(t0) {
		t.Fatalf("no pending deliveries: %s, want the rotation time", got)
	}
	rounds := []domain.PendingRound{
		{RoundAttempts: 0, NextAttemptAt: t0.Add(time.Second)},  // two retries left: +11s +110s
		{RoundAttempts: 2, NextAttemptAt: t0.Add(time.Hour)},    // its last attempt is the next one
		{RoundAttempts: 1, NextAttemptAt: t0.Add(-time.Minute)}, // overdue: counted from now, +110s
	}
	if got, want := s.LastAttemptBy(rounds, t0), t0.Add(time.Hour); !got.Equal(want) {
		t.Fatalf("got %s, want %s", got, want)
	}
	if got, want := s.LastAttemptBy(rounds[:1], t0), t0.Add(time.Second+11*time.Second+110*time.Second); !got.Equal(want) {
		t.Fatalf("got %s, want %s", got, want)
	}
	if got, want := s.LastAttemptBy(rounds[2:], t0), t0.Add(110*time.Second); !got.Equal(want) {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestSecretsAndBody(t *testing.T) {
	t.Parallel()
	a, b := webhook.NewSecret(), webhook.NewSecret()
	if a == b || !regexp.MustCompile(`^whsec_[A-Za-z0-9+/]{44}$`).MatchString(a) {
		t.Fatalf("secrets %q %q", a, b)
	}
	if h := webhook.Hint(a); h != "whsec_..."+a[len(a)-4:] {
		t.Fatalf("hint %q", h)
	}
	id := webhook.NewDeliveryID()
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(id) {
		t.Fatalf("delivery id %q", id)
	}
	body, err := webhook.Body(id, "person.created", t0.Add(123*time.Millisecond), json.RawMessage(`{"id":"per_1"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`{"id":%q,"event":"person.created","created":"2026-11-21T10:00:00.123Z","data":{"id":"per_1"}}`, id)
	if string(body) != want {
		t.Fatalf("body %s\nwant %s", body, want)
	}
}
