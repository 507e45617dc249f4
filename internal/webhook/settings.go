package webhook

import (
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"time"
)

// DefaultSchedule is the delay before each attempt, the first included:
// ten attempts in all.
var DefaultSchedule = []time.Duration{
	0, 5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour,
	5 * time.Hour, 10 * time.Hour, 14 * time.Hour, 20 * time.Hour, 24 * time.Hour,
}

// DefaultRetention keeps finished deliveries for 30 days.
const DefaultRetention = 30 * 24 * time.Hour

// Settings are the server's webhook settings, shared by the API (target
// checks, rotation) and the worker.
type Settings struct {
	// Schedule is the delay before each attempt; its length is the number
	// of attempts in all. Each delay gets 0-10% jitter.
	Schedule []time.Duration
	// Timeout bounds one attempt in all; ConnectTimeout the TCP connection.
	Timeout        time.Duration
	ConnectTimeout time.Duration
	// DisableAfter is how long a failure streak must span to deactivate a
	// subscription (it must also hold at least two failed deliveries).
	DisableAfter time.Duration
	// AllowPrivate lets targets resolve to private addresses: local
	// development and tests only.
	AllowPrivate bool
	// CAFile names a PEM file of extra CAs trusted for deliveries;
	// ExtraCAs adds certificates directly (tests).
	CAFile   string
	ExtraCAs []*x509.Certificate
	// Resolver resolves target hosts; nil is the system resolver.
	Resolver Resolver
	// Jitter turns a scheduled delay into the delay used; nil adds 0-10%.
	Jitter func(time.Duration) time.Duration

	// RotationOverlap is how long, after a rotation, the previous secret
	// signs alongside the new one under Standard Webhooks, so that a
	// receiver holding either verifies.
	RotationOverlap time.Duration

	// Retention is how long a finished delivery stays in the log after its
	// last attempt (or its creation, when it has none).
	Retention time.Duration
	// ChangeRetention is how long the change feed keeps the tombstones of
	// erased persons; the worker prunes them with the deliveries.
	ChangeRetention time.Duration

	// PollInterval is how often a worker looks for due work (real time);
	// it also looks as soon as an attempt ends or a burst closes.
	PollInterval time.Duration
	// Batch is how many bursts one claim takes and closes in one
	// transaction.
	Batch int
	// Concurrency is how many attempts a worker runs at once, in all;
	// PerSubscription how many of them one subscription may hold, so that
	// a slow or silent receiver holds only its own and no receiver gets
	// more than that many requests at once from one instance.
	Concurrency     int
	PerSubscription int

	// Host is this instance's host name; it attempts the deliveries of
	// the local listeners (pds webhooks listen) on that host, and no
	// other's. Empty is HostName().
	Host string
}

// DefaultRotationOverlap is a day, as Svix gives a rotated secret: time
// for a receiver's operator to change its configuration.
const DefaultRotationOverlap = 24 * time.Hour

// Defaults of the attempt slots (decisions: the bound keeps a busy
// subscription from taking every slot and is polite to receivers, while 8
// connections to one receiver are as many as the old worker used for all
// of them).
const (
	DefaultConcurrency     = 64
	DefaultPerSubscription = 8
)

// WithDefaults fills every unset setting with its default.
func (s Settings) WithDefaults() Settings {
	if len(s.Schedule) == 0 {
		s.Schedule = DefaultSchedule
	}
	if s.Timeout <= 0 {
		s.Timeout = 15 * time.Second
	}
	if s.ConnectTimeout <= 0 {
		s.ConnectTimeout = 5 * time.Second
	}
	if s.ConnectTimeout > s.Timeout {
		s.ConnectTimeout = s.Timeout
	}
	if s.DisableAfter <= 0 {
		s.DisableAfter = 120 * time.Hour
	}
	if s.RotationOverlap <= 0 {
		s.RotationOverlap = DefaultRotationOverlap
	}
	if s.Retention <= 0 {
		s.Retention = DefaultRetention
	}
	if s.ChangeRetention <= 0 {
		s.ChangeRetention = DefaultRetention
	}
	if s.Jitter == nil {
		s.Jitter = jitter
	}
	if s.PollInterval <= 0 {
		s.PollInterval = time.Second
	}
	if s.Batch <= 0 {
		s.Batch = 100
	}
	if s.Concurrency <= 0 {
		s.Concurrency = DefaultConcurrency
	}
	if s.PerSubscription <= 0 {
		s.PerSubscription = DefaultPerSubscription
	}
	if s.Host == "" {
		s.Host = HostName()
	}
	return s
}

// Guard is the SSRF guard these settings call for.
func (s Settings) Guard() *Guard {
	s = s.WithDefaults()
	return &Guard{AllowPrivate: s.AllowPrivate, Resolver: s.Resolver, ConnectTimeout: s.ConnectTimeout}
}

// LocalGuard is the guard of local listeners' deliveries: loopback only,
// whatever AllowPrivate says.
func (s Settings) LocalGuard() *Guard {
	s = s.WithDefaults()
	return &Guard{LoopbackOnly: true, Resolver: s.Resolver, ConnectTimeout: s.ConnectTimeout}
}

// HostName is this machine's name as local listeners record it (pds
// webhooks listen and the worker must agree on it).
func HostName() string {
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "localhost"
}

// Warn logs, loudly, the settings that weaken the service.
func (s Settings) Warn(log *slog.Logger) {
	if s.AllowPrivate {
		log.Warn("WEBHOOK TARGETS MAY BE PRIVATE ADDRESSES: --webhook-allow-private is on. " +
			"Deliveries can reach loopback, private networks and cloud metadata endpoints. Use it for local development only.")
	}
}

// maxJitter is the most jitter adds to a delay d.
func maxJitter(d time.Duration) time.Duration { return d / 10 }

// jitter adds 0-10% to d, so that retries of many deliveries spread out.
func jitter(d time.Duration) time.Duration {
	if m := maxJitter(d); m > 0 {
		return d + rand.N(m+1)
	}
	return d
}

// maxSchedule bounds the number of attempts a schedule may hold.
const maxSchedule = 50

// ParseSchedule reads a comma-separated list of Go durations, one per
// attempt ("0s,5s,5m,30m,2h,5h,10h,14h,20h,24h").
func ParseSchedule(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		d, err := time.ParseDuration(part)
		if err != nil {
			return nil, fmt.Errorf("%q is not a duration such as 5m", part)
		}
		if d < 0 {
			return nil, fmt.Errorf("%q is negative", part)
		}
		out = append(out, d)
	}
	if len(out) > maxSchedule {
		return nil, fmt.Errorf("%d attempts; at most %d", len(out), maxSchedule)
	}
	return out, nil
}

// rootCAs is the system pool plus the configured extra CAs.
func (s Settings) rootCAs() (*x509.CertPool, error) {
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if s.CAFile != "" {
		pem, err := os.ReadFile(s.CAFile)
		if err != nil {
			return nil, fmt.Errorf("webhook CA file: %w", err)
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, errors.New("webhook CA file: no PEM certificate in " + s.CAFile)
		}
	}
	for _, c := range s.ExtraCAs {
		pool.AddCert(c)
	}
	return pool, nil
}
