// Package instance assembles one instance's HTTP face, the API with the
// console under /console/, from the parts they share: pds serve and the
// tests build it here, so that what the tests call is what is served.
package instance

import (
	"log/slog"
	"time"

	"github.com/pds-dev/pds/internal/clock"
	"github.com/pds-dev/pds/internal/console"
	"github.com/pds-dev/pds/internal/httpapi"
	"github.com/pds-dev/pds/internal/ratelimit"
	"github.com/pds-dev/pds/internal/serving"
	"github.com/pds-dev/pds/internal/store"
)

// Parts are what one instance's API and console are built from.
type Parts struct {
	Settings serving.Settings
	Store    store.Store
	Clock    clock.Clock
	// Limiter counts the keys' budgets; nil for the one the store calls
	// for (ratelimit.For: in the database when instances share it).
	Limiter ratelimit.Limiter
	Log     *slog.Logger
	// Metrics, when set, counts requests and refusals.
	Metrics httpapi.RequestMetrics
	// SessionTTL is how long a console sign-in lasts; 0 for the
	// console's default.
	SessionTTL time.Duration
}

// New builds the API, with the console mounted, over p.
func New(p Parts) *httpapi.Server {
	if p.Limiter == nil {
		p.Limiter = ratelimit.For(p.Store)
	}
	if p.Log == nil {
		p.Log = slog.New(slog.DiscardHandler)
	}
	cons := console.New(console.Config{Settings: p.Settings, SessionTTL: p.SessionTTL}, p.Store, p.Clock, p.Limiter, p.Log)
	return httpapi.New(httpapi.Config{Settings: p.Settings, Metrics: p.Metrics, Console: cons.Handler()}, p.Store, p.Clock, p.Limiter, p.Log)
}
