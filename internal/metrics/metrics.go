// Package metrics is the Prometheus exposition for operators: HTTP requests,
// the webhook pipeline, rate-limit refusals and the database pools. Each
// server owns its registry (never the global default), served by Handler on
// a listener of its own (pds serve --metrics-addr). No label holds an
// account id, a key or anything a caller chose but the route pattern.
package metrics

import (
	"context"
	"database/sql"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pds-dev/pds/internal/clock"
	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// Metrics holds the server's collectors.
type Metrics struct {
	Registry *prometheus.Registry

	requests   *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	refusals   prometheus.Counter
	refusedDB  *prometheus.CounterVec
	authFailed *prometheus.CounterVec
	throttled  *prometheus.CounterVec
	attempts   *prometheus.CounterVec
	attemptDur prometheus.Histogram
	delivered  prometheus.Histogram
}

// New makes the collectors on a registry of their own, with the Go runtime
// and process collectors.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		Registry: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pds_http_requests_total",
			Help: "HTTP requests answered, by route pattern (\"unmatched\" for none) and status code.",
		}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "pds_http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by route pattern.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route"}),
		refusals: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pds_rate_limit_refusals_total",
			Help: "Requests refused with 429 because their key's budget was spent.",
		}),
		refusedDB: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pds_http_unavailable_total",
			Help: "Requests refused with 503 because the database could not serve them, by cause: " +
				"database_unreachable, database_timeout (no answer within the deadline), disk_full, disk_error (the database's files could not be read or written), database_contention.",
		}, []string{"cause"}),
		authFailed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pds_auth_failures_total",
			Help: "Failed authentications (a bad API key; a bad console sign-in, link or session), by face: api, console.",
		}, []string{"face"}),
		throttled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pds_auth_throttled_total",
			Help: "Requests refused with 429, before any key was read, because their address had spent its budget of failed authentications, by face: api, console.",
		}, []string{"face"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pds_webhook_attempts_total",
			Help: "Webhook delivery attempts recorded, by outcome: succeeded, retry (an answer worth retrying), " +
				"error (no answer: timeout or connection failure), failed (not retried or retries used up), gone (410).",
		}, []string{"outcome"}),
		attemptDur: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "pds_webhook_attempt_duration_seconds",
			Help:    "Duration of one webhook delivery attempt, from the request to the end of the answer.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 15, 30},
		}),
		delivered: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "pds_webhook_delivery_seconds",
			Help:    "Time from a burst's close (its delivery's creation) to the delivery's 2xx, retries included.",
			Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 7200, 86400},
		}),
	}
	for _, outcome := range []string{"succeeded", "retry", "error", "failed", "gone"} {
		m.attempts.WithLabelValues(outcome) // present from the start, at 0
	}
	for _, cause := range domain.Causes {
		m.refusedDB.WithLabelValues(string(cause))
	}
	for _, face := range []string{"api", "console"} {
		m.authFailed.WithLabelValues(face)
		m.throttled.WithLabelValues(face)
	}
	reg.MustRegister(m.requests, m.latency, m.refusals, m.refusedDB, m.authFailed, m.throttled, m.attempts, m.attemptDur, m.delivered,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the exposition.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

// Request counts an answered request; route is the ServeMux pattern.
func (m *Metrics) Request(route string, status int, took time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(route).Observe(took.Seconds())
}

// RateLimited counts a 429.
func (m *Metrics) RateLimited() { m.refusals.Inc() }

// AuthFailed counts a failed authentication (ratelimit.FailureObserver).
func (m *Metrics) AuthFailed(face string) { m.authFailed.WithLabelValues(face).Inc() }

// AuthThrottled counts a request refused for its address's spent budget of
// failures (ratelimit.FailureObserver).
func (m *Metrics) AuthThrottled(face string) { m.throttled.WithLabelValues(face).Inc() }

// Unavailable counts a 503 for a database that could not serve.
func (m *Metrics) Unavailable(cause domain.Cause) { m.refusedDB.WithLabelValues(string(cause)).Inc() }

// Attempt counts a recorded webhook attempt (webhook.Observer).
func (m *Metrics) Attempt(outcome string, took time.Duration) {
	m.attempts.WithLabelValues(outcome).Inc()
	m.attemptDur.Observe(took.Seconds())
}

// Delivered observes a delivery's first 2xx (webhook.Observer).
func (m *Metrics) Delivered(sinceClose time.Duration) {
	m.delivered.Observe(max(0, sinceClose).Seconds())
}

// BacklogSource reads where the webhook pipeline stands (the store does,
// with bounded queries).
type BacklogSource interface {
	WebhookBacklog(ctx context.Context, now time.Time) (store.WebhookBacklog, error)
}

// PoolSource gives the statistics of the database pools, by name.
type PoolSource interface {
	PoolStats() map[string]sql.DBStats
}

// RetrySource counts the transactions the store ran again after a conflict
// with a concurrent one, by conflict, and those it gave up ("exhausted").
type RetrySource interface {
	Retries() map[string]uint64
}

// scrapeTimeout bounds the queries of one scrape.
const scrapeTimeout = 5 * time.Second

// WatchBacklog reports the webhook backlog at every scrape.
func (m *Metrics) WatchBacklog(src BacklogSource, clk clock.Clock) {
	m.Registry.MustRegister(&backlogCollector{src: src, clock: clk})
}

// WatchPools reports the database pools at every scrape.
func (m *Metrics) WatchPools(src PoolSource) {
	m.Registry.MustRegister(&poolCollector{src: src})
}

// WatchRetries reports the store's retried transactions at every scrape.
func (m *Metrics) WatchRetries(src RetrySource) {
	m.Registry.MustRegister(&retryCollector{src: src})
}

var retriesDesc = prometheus.NewDesc("pds_db_retries_total",
	"Database transactions run again after a conflict with a concurrent one (cause: deadlock, serialization, busy), "+
		"and those given up after the bounded runs (cause: exhausted, answered 503 database_contention).", []string{"cause"}, nil)

type retryCollector struct{ src RetrySource }

func (c *retryCollector) Describe(ch chan<- *prometheus.Desc) { ch <- retriesDesc }

func (c *retryCollector) Collect(ch chan<- prometheus.Metric) {
	for cause, n := range c.src.Retries() {
		ch <- prometheus.MustNewConstMetric(retriesDesc, prometheus.CounterValue, float64(n), cause)
	}
}

var (
	pendingDesc = prometheus.NewDesc("pds_webhook_deliveries_pending",
		"Pending webhook deliveries (due now or scheduled for a retry), over every account.", nil, nil)
	lagDesc = prometheus.NewDesc("pds_webhook_oldest_due_seconds",
		"Age of the oldest pending delivery that is due: how far delivery lags (0 when none is due).", nil, nil)
	burstsDesc = prometheus.NewDesc("pds_webhook_open_bursts",
		"Bursts of person changes not yet closed into deliveries.", nil, nil)
	inactiveDesc = prometheus.NewDesc("pds_webhook_subscriptions_inactive",
		"Inactive webhook subscriptions over every account, by why: failures (a sustained failure streak), gone (410), manual.",
		[]string{"reason"}, nil)
	backlogUpDesc = prometheus.NewDesc("pds_webhook_backlog_up",
		"1 when the last scrape could read the webhook backlog from the database, else 0.", nil, nil)
)

type backlogCollector struct {
	src   BacklogSource
	clock clock.Clock
}

func (c *backlogCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- pendingDesc
	ch <- lagDesc
	ch <- burstsDesc
	ch <- inactiveDesc
	ch <- backlogUpDesc
}

func (c *backlogCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	now := c.clock.Now()
	b, err := c.src.WebhookBacklog(ctx, now)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(backlogUpDesc, prometheus.GaugeValue, 0)
		return
	}
	lag := 0.0
	if b.OldestDue != nil {
		lag = max(0, now.Sub(*b.OldestDue).Seconds())
	}
	ch <- prometheus.MustNewConstMetric(backlogUpDesc, prometheus.GaugeValue, 1)
	ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(b.Pending))
	ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, lag)
	ch <- prometheus.MustNewConstMetric(burstsDesc, prometheus.GaugeValue, float64(b.OpenBursts))
	for reason, n := range b.Inactive {
		ch <- prometheus.MustNewConstMetric(inactiveDesc, prometheus.GaugeValue, float64(n), reason)
	}
}

var (
	poolOpenDesc = prometheus.NewDesc("pds_db_pool_open_connections",
		"Open connections of a database pool.", []string{"pool"}, nil)
	poolInUseDesc = prometheus.NewDesc("pds_db_pool_in_use_connections",
		"Connections of a database pool in use.", []string{"pool"}, nil)
	poolIdleDesc = prometheus.NewDesc("pds_db_pool_idle_connections",
		"Idle connections of a database pool.", []string{"pool"}, nil)
	poolMaxDesc = prometheus.NewDesc("pds_db_pool_max_open_connections",
		"The most connections a database pool opens.", []string{"pool"}, nil)
	poolWaitsDesc = prometheus.NewDesc("pds_db_pool_waits_total",
		"Times a query waited for a free connection of a database pool.", []string{"pool"}, nil)
	poolWaitDesc = prometheus.NewDesc("pds_db_pool_wait_seconds_total",
		"Time queries spent waiting for a free connection of a database pool.", []string{"pool"}, nil)
)

type poolCollector struct{ src PoolSource }

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{poolOpenDesc, poolInUseDesc, poolIdleDesc, poolMaxDesc, poolWaitsDesc, poolWaitDesc} {
		ch <- d
	}
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	for name, s := range c.src.PoolStats() {
		ch <- prometheus.MustNewConstMetric(poolOpenDesc, prometheus.GaugeValue, float64(s.OpenConnections), name)
		ch <- prometheus.MustNewConstMetric(poolInUseDesc, prometheus.GaugeValue, float64(s.InUse), name)
		ch <- prometheus.MustNewConstMetric(poolIdleDesc, prometheus.GaugeValue, float64(s.Idle), name)
		ch <- prometheus.MustNewConstMetric(poolMaxDesc, prometheus.GaugeValue, float64(s.MaxOpenConnections), name)
		ch <- prometheus.MustNewConstMetric(poolWaitsDesc, prometheus.CounterValue, float64(s.WaitCount), name)
		ch <- prometheus.MustNewConstMetric(poolWaitDesc, prometheus.CounterValue, s.WaitDuration.Seconds(), name)
	}
}
