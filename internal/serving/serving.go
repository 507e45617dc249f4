// Package serving holds the settings the two faces of one server, the API
// (internal/httpapi) and the console (internal/console), share, with their
// defaults in one place, so that a page and a request run by the same rules.
package serving

import (
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/pds-dev/pds/internal/outage"
	"github.com/pds-dev/pds/internal/ratelimit"
	"github.com/pds-dev/pds/internal/webhook"
)

// The defaults of the settings (and of pds serve's flags).
const (
	DefaultRateLimit        = 600
	DefaultCustomFieldLimit = 100
	DefaultWebhookWindow    = 5 * time.Minute
	// DefaultDatabaseTimeout leaves a request refused for a frozen database
	// time to be answered within 5 s.
	DefaultDatabaseTimeout = 4 * time.Second
	// DefaultAuthFailureLimit is how many failed authentications an address
	// may make a minute: more than a person mistyping a key, far fewer than
	// a guesser would like.
	DefaultAuthFailureLimit = 20
	// DefaultChangeRetention is how long the change feed keeps tombstones,
	// and so how long a cursor stays good.
	DefaultChangeRetention = 720 * time.Hour
)

// Settings are what the API and the console both need.
type Settings struct {
	// PublicURL is the base of links such as 0_person_url, without a
	// trailing slash.
	PublicURL string
	// RateLimit is the default number of requests per key per minute; a
	// console page or action counts as one request of its key.
	RateLimit int
	// CustomFieldLimit is the number of live custom fields an account may
	// hold.
	CustomFieldLimit int
	// WebhookWindow is how long a burst of changes to one person stays open
	// after its latest change before it is delivered.
	WebhookWindow time.Duration
	// Webhook holds the settings that checking targets and rotating secrets
	// need (private targets, resolver, retry schedule).
	Webhook webhook.Settings
	// DatabaseTimeout bounds the database work of one request or page (a
	// streamed export's: of each statement); past it the request is
	// refused with a 503.
	DatabaseTimeout time.Duration
	// Outages, when set, hears of every request refused because the
	// database could not serve it, and of every request served.
	Outages *outage.Log
	// AuthFailures is the budget of failed authentications per client
	// address; give both faces the same one, so that an address has one
	// budget whichever it tries (when nil, each makes its own).
	AuthFailures *ratelimit.Failures
	// ClientAddressHeader names the request header a proxy in front of the
	// server writes the client's address in (X-Forwarded-For, X-Real-IP,
	// Forwarded, ...); empty, the connection's peer is the client, and no
	// header a client could write itself is believed.
	ClientAddressHeader string
	// ChangeRetention is how long the change feed keeps the tombstones of
	// erased persons; a cursor issued longer ago is refused (410).
	ChangeRetention time.Duration
}

// WithDefaults returns s with every zero setting at its default.
func (s Settings) WithDefaults() Settings {
	if s.RateLimit <= 0 {
		s.RateLimit = DefaultRateLimit
	}
	if s.ChangeRetention <= 0 {
		s.ChangeRetention = DefaultChangeRetention
	}
	if s.CustomFieldLimit <= 0 {
		s.CustomFieldLimit = DefaultCustomFieldLimit
	}
	if s.WebhookWindow <= 0 {
		s.WebhookWindow = DefaultWebhookWindow
	}
	if s.DatabaseTimeout <= 0 {
		s.DatabaseTimeout = DefaultDatabaseTimeout
	}
	if s.AuthFailures == nil {
		s.AuthFailures = ratelimit.NewFailures(DefaultAuthFailureLimit)
	}
	s.Webhook = s.Webhook.WithDefaults()
	return s
}

// ClientAddress is the address a request's failed authentications count
// against: the connection's peer or, when ClientAddressHeader is set, the
// last address that header holds, the one the proxy nearest the server
// wrote (addresses a client sent itself come before it). A header that is
// absent or holds no address leaves the peer. An IPv6 address stands for
// its /64, which a client usually holds whole: one budget each, not one
// per address it could pick.
func (s Settings) ClientAddress(r *http.Request) string {
	if s.ClientAddressHeader != "" {
		if a, ok := lastForwarded(r.Header.Values(s.ClientAddressHeader), strings.EqualFold(s.ClientAddressHeader, "Forwarded")); ok {
			return budgetKey(a)
		}
	}
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return budgetKey(ap.Addr())
}

// lastForwarded is the last address of a list header (comma-separated,
// perhaps over several lines); of an RFC 7239 Forwarded header, the for=
// of its last element.
func lastForwarded(lines []string, rfc7239 bool) (netip.Addr, bool) {
	if len(lines) == 0 {
		return netip.Addr{}, false
	}
	items := strings.Split(lines[len(lines)-1], ",")
	item := strings.TrimSpace(items[len(items)-1])
	if rfc7239 {
		forValue := ""
		for _, pair := range strings.Split(item, ";") {
			if name, value, _ := strings.Cut(strings.TrimSpace(pair), "="); strings.EqualFold(name, "for") {
				forValue = strings.Trim(value, `"`)
			}
		}
		item = forValue
	}
	if ap, err := netip.ParseAddrPort(item); err == nil {
		return ap.Addr(), true
	}
	a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(item, "["), "]"))
	return a, err == nil
}

func budgetKey(a netip.Addr) string {
	a = a.Unmap().WithZone("")
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}
