package main

import (
	"context"
	"errors"
	"fmt"
	stdlog "log"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/pds-dev/pds/internal/clock"
	"github.com/pds-dev/pds/internal/httpapi"
	"github.com/pds-dev/pds/internal/instance"
	"github.com/pds-dev/pds/internal/metrics"
	"github.com/pds-dev/pds/internal/outage"
	"github.com/pds-dev/pds/internal/ratelimit"
	"github.com/pds-dev/pds/internal/secrets"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/serving"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/webhook"
)

// serveConfig is every server setting of decisions.md section 9.
type serveConfig struct {
	addr                string
	publicURL           string
	rateLimit           int
	customFieldLimit    int
	webhookWindow       time.Duration
	webhookSchedule     string
	webhookTimeout      time.Duration
	webhookDisable      time.Duration
	webhookAllowPriv    bool
	webhookCAFile       string
	webhookRetention    time.Duration
	webhookConcurrency  int
	webhookPerSub       int
	metricsAddr         string
	pprofAddr           string
	shutdownGracePeriod time.Duration
	shutdownDrain       time.Duration
	databaseTimeout     time.Duration
	tlsCert, tlsKey     string
	migrate             bool
	clientAddressHeader string
	changeRetention     time.Duration
}

func (e cmdEnv) serve(fs *pflag.FlagSet) func([]string) error {
	c := commonFlagsOn(fs)
	replicaFlagOn(fs, c)
	cfg := serveFlags(fs)
	return func([]string) error { return e.runServer(*cfg, c) }
}

// serveFlags declares the server settings on fs; they are set once fs is
// parsed.
func serveFlags(fs *pflag.FlagSet) *serveConfig {
	cfg := &serveConfig{}
	fs.StringVar(&cfg.addr, "addr", defaultAddr, "listen address: localhost is this machine's loopback interfaces alone (127.0.0.1 and ::1); :8080 is every interface")
	fs.StringVar(&cfg.publicURL, "public-url", "", "base of 0_person_url and links (default: http://, or https:// with --tls-cert, the host of --addr or localhost, and the port bound)")
	fs.IntVar(&cfg.rateLimit, "rate-limit", serving.DefaultRateLimit, "default requests per key per minute")
	fs.IntVar(&cfg.customFieldLimit, "custom-field-limit", serving.DefaultCustomFieldLimit, "live custom fields per account")
	fs.DurationVar(&cfg.webhookWindow, "webhook-window", serving.DefaultWebhookWindow, "coalescing window (Go duration)")
	fs.StringVar(&cfg.webhookSchedule, "webhook-retry-schedule", "0s,5s,5m,30m,2h,5h,10h,14h,20h,24h", "delay before each delivery attempt")
	fs.DurationVar(&cfg.webhookTimeout, "webhook-timeout", 15*time.Second, "one delivery attempt, in all")
	fs.DurationVar(&cfg.webhookDisable, "webhook-disable-after", 120*time.Hour, "failure streak that deactivates a subscription")
	fs.BoolVar(&cfg.webhookAllowPriv, "webhook-allow-private", false, "allow private webhook targets (development only)")
	fs.StringVar(&cfg.webhookCAFile, "webhook-ca-file", "", "extra CA (PEM) trusted for deliveries")
	fs.DurationVar(&cfg.webhookRetention, "webhook-retention", webhook.DefaultRetention,
		"how long finished deliveries stay in the delivery log after their last attempt (720h = 30 days)")
	fs.IntVar(&cfg.webhookConcurrency, "webhook-concurrency", webhook.DefaultConcurrency,
		"delivery attempts one instance runs at once, in all")
	fs.IntVar(&cfg.webhookPerSub, "webhook-subscription-concurrency", webhook.DefaultPerSubscription,
		"delivery attempts one instance runs at once for one subscription (a slow receiver holds no more)")
	fs.StringVar(&cfg.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at /metrics on this address (e.g. 127.0.0.1:9090); off when empty")
	fs.StringVar(&cfg.pprofAddr, "pprof-addr", "", "serve Go's runtime profiles (net/http/pprof) at /debug/pprof/ on this address (e.g. 127.0.0.1:6060); off when empty")
	fs.DurationVar(&cfg.shutdownGracePeriod, "shutdown-grace", 30*time.Second,
		"how long stopping may take, from the signal: the drain, then requests and webhook attempts in flight finish")
	fs.DurationVar(&cfg.shutdownDrain, "shutdown-drain", 5*time.Second,
		"on SIGTERM, how long to keep accepting requests while /readyz says 503, so a load balancer notices (not on Ctrl-C)")
	fs.DurationVar(&cfg.databaseTimeout, "database-timeout", serving.DefaultDatabaseTimeout,
		"how long one request's database work may take before it is refused with 503 (an export: each of its reads)")
	fs.StringVar(&cfg.tlsCert, "tls-cert", "", "serve HTTPS with this certificate chain (PEM); needs --tls-key")
	fs.StringVar(&cfg.tlsKey, "tls-key", "", "the private key (PEM) of --tls-cert")
	fs.BoolVar(&cfg.migrate, "migrate", true,
		"apply pending migrations at start; false: never change the schema, and refuse to start, naming them, when migrations are pending (a deploy runs pds migrate first)")
	fs.DurationVar(&cfg.changeRetention, "change-retention", serving.DefaultChangeRetention,
		"how long the change feed (GET /persons/changes) keeps the tombstones of erased persons; a cursor issued longer ago is refused (410)")
	fs.StringVar(&cfg.clientAddressHeader, "client-address-header", "",
		"behind a proxy: the header it writes the client's address in (X-Forwarded-For, X-Real-IP, Forwarded); its last address "+
			"is the client's for the budget of failed authentications. Name one only a proxy sets: off, the connection's peer is the client")
	return cfg
}

// runServer serves until the command's context ends.
func (e cmdEnv) runServer(cfg serveConfig, c *commonFlags) (err error) {
	if err := errors.Join(positive("rate-limit", cfg.rateLimit), positive("custom-field-limit", cfg.customFieldLimit),
		positiveDuration("webhook-window", cfg.webhookWindow), positiveDuration("webhook-timeout", cfg.webhookTimeout),
		positiveDuration("shutdown-grace", cfg.shutdownGracePeriod), positiveDuration("database-timeout", cfg.databaseTimeout),
		drainWithinGrace(cfg.shutdownDrain, cfg.shutdownGracePeriod), checkDatabases(c),
		checkHeaderName("client-address-header", cfg.clientAddressHeader)); err != nil {
		return usageError{err}
	}
	hooks, err := webhookSettings(cfg)
	if err != nil {
		return err
	}
	tlsConfig, err := loadTLS(cfg.tlsCert, cfg.tlsKey)
	if err != nil {
		return err
	}
	// Bound before the database is opened: a taken address creates no
	// file, account or key.
	lns, err := listenAPI(cfg.addr)
	if err != nil {
		return err
	}
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	var metricsLn net.Listener
	if cfg.metricsAddr != "" {
		if metricsLn, err = listen("metrics-addr", cfg.metricsAddr, cfg.metricsAddr); err != nil {
			return err
		}
		defer metricsLn.Close()
	}
	var pprofLn net.Listener
	if cfg.pprofAddr != "" {
		if pprofLn, err = listen("pprof-addr", cfg.pprofAddr, cfg.pprofAddr); err != nil {
			return err
		}
		defer pprofLn.Close()
	}
	if cfg.publicURL == "" {
		cfg.publicURL = defaultPublicURL(cfg.addr, lns[0].Addr(), tlsConfig != nil)
	}
	cfg.publicURL = strings.TrimRight(cfg.publicURL, "/")

	log := slog.New(slog.NewJSONHandler(e.stderr, nil))
	// From here on a failure (the database unreachable, say)
	// is a line of the JSON log like every other, not plain text beside it.
	defer func() {
		if err != nil {
			log.Error("serve failed", "error", err.Error())
			err = loggedError{err}
		}
	}()
	hooks.Warn(log)
	st, err := openServingStore(e.ctx, c, cfg.migrate, log)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := sealSecrets(e.ctx, st, log); err != nil {
		return err
	}
	outages := outage.New(log, clock.System{})
	clk := clock.System{}
	if err := e.bootstrap(st, clk, c.json, cfg.publicURL, lns); err != nil {
		return err
	}
	// The administrative commands print links to this server.
	if err := st.RecordPublicURL(e.ctx, cfg.publicURL, clk.Now()); err != nil {
		return err
	}

	// One budget of failed authentications per client address, for the
	// API's keys and the console's sign-ins, links and sessions alike.
	failures := ratelimit.NewFailures(serving.DefaultAuthFailureLimit)
	shared := serving.Settings{
		PublicURL:           cfg.publicURL,
		RateLimit:           cfg.rateLimit,
		CustomFieldLimit:    cfg.customFieldLimit,
		WebhookWindow:       cfg.webhookWindow,
		Webhook:             hooks,
		DatabaseTimeout:     cfg.databaseTimeout,
		Outages:             outages,
		AuthFailures:        failures,
		ClientAddressHeader: http.CanonicalHeaderKey(cfg.clientAddressHeader),
		ChangeRetention:     cfg.changeRetention,
	}
	parts := instance.Parts{Settings: shared, Store: st, Clock: clk, Log: log}
	var observer webhook.Observer
	if metricsLn != nil {
		m := metrics.New()
		m.WatchBacklog(st, clk)
		if p, ok := st.(metrics.PoolSource); ok {
			m.WatchPools(p)
		}
		if r, ok := st.(metrics.RetrySource); ok {
			m.WatchRetries(r)
		}
		if r, ok := st.(metrics.ReplicaSource); ok {
			m.WatchReplicas(r)
		}
		parts.Metrics, observer = m, m
		failures.Observe(m)
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", m.Handler())
		ms := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: errorLog(log)}
		go func() { _ = ms.Serve(metricsLn) }()
		defer ms.Close()
		log.Info("serving metrics", "addr", metricsLn.Addr().String(), "path", "/metrics")
	}
	if pprofLn != nil {
		defer servePprof(pprofLn, log)()
	}
	srv := instance.New(parts)

	stopWebhooks, err := startWebhooks(st, webhook.PersonRenderer{Persons: st, PublicURL: cfg.publicURL}, clk, hooks, log, observer, outages)
	if err != nil {
		return err
	}
	fresh := &newConns{}
	hs := &http.Server{
		ConnState:         fresh.track,
		Handler:           srv.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          errorLog(log),
		TLSConfig:         tlsConfig,
	}
	addrs := make([]string, len(lns))
	for i, ln := range lns {
		addrs[i] = ln.Addr().String()
	}
	log.Info("serving", "addr", addrs[0], "addrs", addrs, "engine", st.Engine(), "public_url", cfg.publicURL, "tls", tlsConfig != nil)
	apis := make([]net.Listener, len(lns))
	errc := make(chan error, len(lns))
	for i, ln := range lns {
		api := newRetiringListener(ln)
		apis[i] = api
		go func() {
			if tlsConfig != nil {
				errc <- hs.ServeTLS(api, "", "")
				return
			}
			errc <- hs.Serve(api)
		}()
	}

	select {
	case err := <-errc:
		stopWebhooks(cfg.shutdownGracePeriod)()
		return err
	case <-e.ctx.Done():
	}
	return shutDown(log, srv, hs, apis, fresh, stopWebhooks, cfg, context.Cause(e.ctx))
}

// sealSecrets settles how the server keeps its secrets: with a key
// (--secrets-key-file) every secret still in clear is sealed now; without
// one it says at start that they are stored in clear, and refuses a
// database whose secrets are sealed, which it could not sign with.
func sealSecrets(ctx context.Context, st store.Store, log *slog.Logger) error {
	if st.SealsSecrets() {
		n, err := st.ResealSecrets(ctx, true)
		if err != nil {
			return err
		}
		log.Info("secrets are stored sealed", "sealed_now", n)
		return nil
	}
	inUse, err := st.SecretKeys(ctx)
	if err != nil {
		return err
	}
	for id := range inUse {
		if id != "" {
			return usageError{&secrets.MissingKeyError{KeyID: id}}
		}
	}
	log.Warn("secrets are stored in clear: webhook signing secrets and suppression secrets are readable in the database and in every backup; "+
		"give --secrets-key-file (PDS_SECRETS_KEY_FILE) to seal them", "secrets", inUse[""])
	return nil
}

// shutDown shuts the server down in the order a load balancer needs. At once:
// /readyz turns 503 and every answer asks its client to close the
// connection (httpapi.Server.Drain), and the webhook worker starts no new
// attempt and hands back the deliveries it claimed and has not started.
// On SIGTERM the listener keeps accepting for the drain period, so that
// requests sent before the balancer noticed are served; then it stops
// accepting, and the requests and attempts in flight finish within what is
// left of the grace.
func shutDown(log *slog.Logger, srv *httpapi.Server, hs *http.Server, apis []net.Listener, fresh *newConns,
	stopWebhooks func(time.Duration) func(), cfg serveConfig, cause error) error {
	ctx, cancel := context.WithTimeout(context.Background(), cfg.shutdownGracePeriod)
	defer cancel()
	deadline, _ := ctx.Deadline()
	srv.Drain()
	webhooksStopped := stopWebhooks(cfg.shutdownGracePeriod)
	drain := cfg.shutdownDrain
	var sig signalError
	if !errors.As(cause, &sig) || sig.signal != syscall.SIGTERM {
		drain = 0 // Ctrl-C: nobody balances load onto a terminal
	}
	log.Info("shutting down: /readyz answers 503; accepting requests for the drain period, then finishing those in flight",
		"signal", signalName(cause), "drain", drain.String(), "grace", cfg.shutdownGracePeriod.String())
	time.Sleep(drain)
	// No new connection from here; each one open is closed after its next
	// answer (idle ones at once), and every request that reached the
	// server is read before net/http starts shutting down, since it drops
	// a request read after that unanswered.
	var retired sync.WaitGroup
	for _, api := range apis {
		if rl, ok := api.(*retiringListener); ok {
			retired.Go(rl.retire)
		}
	}
	retired.Wait()
	hs.SetKeepAlivesEnabled(false)
	fresh.waitRequests(time.Now().Add(min(time.Second, time.Until(deadline))))
	err := hs.Shutdown(ctx)
	// Attempts in flight finish within what is left of the grace; whatever
	// is not delivered yet waits in the database.
	webhooksStopped()
	if err != nil {
		return fmt.Errorf("shutdown: requests still in flight after --shutdown-grace %s: %w", cfg.shutdownGracePeriod, err)
	}
	log.Info("stopped", "took_ms", cfg.shutdownGracePeriod.Milliseconds()-time.Until(deadline).Milliseconds())
	return nil
}

// drainWithinGrace refuses a drain period that leaves the requests in
// flight no time to finish.
func drainWithinGrace(drain, grace time.Duration) error {
	if drain < 0 {
		return badSetting("shutdown-drain", drain.String(), "must not be negative")
	}
	if drain >= grace {
		return badSetting("shutdown-drain", drain.String(), "must be shorter than --shutdown-grace ("+grace.String()+")")
	}
	return nil
}

// errorLog routes what net/http logs on its own (TLS handshakes, bad
// connections, a handler that wrote twice) into the JSON log.
func errorLog(log *slog.Logger) *stdlog.Logger {
	return slog.NewLogLogger(log.With("source", "net/http").Handler(), slog.LevelWarn)
}

// loggedError is an error the server has already written to its log, so
// that main does not print it a second time outside the log.
type loggedError struct{ err error }

func (e loggedError) Error() string { return e.err.Error() }
func (e loggedError) Unwrap() error { return e.err }

// bootstrap prints the first key on a fresh database, once.
func (e cmdEnv) bootstrap(st store.Store, clk clock.Clock, asJSON bool, publicURL string, lns []net.Listener) error {
	k, full, err := service.Bootstrap(e.ctx, st, clk.Now())
	if err != nil || full == "" {
		return err
	}
	if asJSON {
		out := keyJSON(k)
		out["key"] = full
		return e.printJSON(out)
	}
	fmt.Fprintf(e.stdout, "\nCreated account \"default\" (%s) and an API key with every scope, erasing persons included\n", k.AccountID)
	fmt.Fprintf(e.stdout, "(pds keys create --account %s --scopes ... mints narrower ones). The key is shown once; store it now:\n\n  %s\n\n", k.AccountID, full)
	fmt.Fprintf(e.stdout, "Listening on %s%s.\n", listening(lns), loopbackNote(lns))
	fmt.Fprintf(e.stdout, "Try: curl -H 'Authorization: Bearer %s' %s/me\n\n", full, publicURL)
	return nil
}
