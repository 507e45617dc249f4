package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/pds-dev/pds/internal/clock"
	"github.com/pds-dev/pds/internal/outage"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/webhook"
)

// webhookSettings turns the server flags into webhook settings, refusing
// bad values at start rather than at the first delivery.
func webhookSettings(cfg serveConfig) (webhook.Settings, error) {
	schedule, err := webhook.ParseSchedule(cfg.webhookSchedule)
	if err != nil {
		return webhook.Settings{}, badSetting("webhook-retry-schedule", cfg.webhookSchedule, err.Error())
	}
	if err := errors.Join(positiveDuration("webhook-disable-after", cfg.webhookDisable),
		positive("webhook-concurrency", cfg.webhookConcurrency), positive("webhook-subscription-concurrency", cfg.webhookPerSub),
		positiveDuration("webhook-retention", cfg.webhookRetention), atLeastASecond("change-retention", cfg.changeRetention)); err != nil {
		return webhook.Settings{}, usageError{err}
	}
	s := webhook.Settings{
		Schedule:     schedule,
		Timeout:      cfg.webhookTimeout,
		DisableAfter: cfg.webhookDisable,
		AllowPrivate: cfg.webhookAllowPriv,
		CAFile:       cfg.webhookCAFile,
		Retention:    cfg.webhookRetention,
		// The worker prunes the feed's tombstones with the deliveries.
		ChangeRetention: cfg.changeRetention,

		Concurrency:     cfg.webhookConcurrency,
		PerSubscription: cfg.webhookPerSub,
	}
	if _, err := webhook.NewClient(s); err != nil {
		return webhook.Settings{}, badSetting("webhook-ca-file", cfg.webhookCAFile, err.Error())
	}
	return s, nil
}

// startWebhooks runs the webhook worker of this instance until the returned
// stop is called. stop has the worker start nothing more and hand back what
// it claimed and has not started, at once; the function it returns waits
// for the attempts in flight to finish and record their outcome, at most
// until grace has passed since stop.
func startWebhooks(st store.Store, r webhook.Renderer, clk clock.Clock, s webhook.Settings, log *slog.Logger,
	obs webhook.Observer, outages *outage.Log) (stop func(grace time.Duration) (wait func()), err error) {
	w, err := webhook.NewWorker(st, r, clk, s, log)
	if err != nil {
		return nil, err
	}
	if obs != nil {
		w.Observe(obs)
	}
	w.ReportOutages(outages)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx)
	}()
	return func(grace time.Duration) func() {
		cancel()
		deadline := time.Now().Add(grace)
		return func() {
			select {
			case <-done:
			case <-time.After(time.Until(deadline)):
				log.Warn("webhook attempts still in flight at shutdown; their leases expire and another instance retries them")
			}
		}
	}, nil
}
