package postgres

import (
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestAdmitTimeline: a read-write server on a timeline older than the
// newest this process connected to on its system is an old primary, and
// refused; a standby is never written to, whatever its timeline.
func TestAdmitTimeline(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		id     serverIdentity
		newest int
		refuse bool
	}{
		{"the first server of its system", serverIdentity{timeline: 1}, 0, false},
		{"the same timeline", serverIdentity{timeline: 2}, 2, false},
		{"a newer timeline: a promotion", serverIdentity{timeline: 3}, 2, false},
		{"an older timeline: an old primary started alone", serverIdentity{timeline: 1}, 2, true},
		{"a standby, behind", serverIdentity{timeline: 0, readOnly: true}, 2, false},
	} {
		err := admitTimeline(c.id, c.newest)
		var wb *errWentBack
		if got := errors.As(err, &wb); got != c.refuse {
			t.Errorf("%s: %v, want refused %v", c.name, err, c.refuse)
		}
	}
}

// TestPreferHost: the host that passed last goes first, with every entry of
// it (sslmode=prefer tries each host with TLS, then without); the others
// keep their order.
func TestPreferHost(t *testing.T) {
	t.Parallel()
	hosts := func(names ...string) []*pgconn.FallbackConfig {
		var out []*pgconn.FallbackConfig
		for _, n := range names {
			out = append(out, &pgconn.FallbackConfig{Host: n, Port: 5432})
		}
		return out
	}
	names := func(hs []*pgconn.FallbackConfig) string {
		var out []string
		for _, h := range hs {
			out = append(out, h.Host)
		}
		return strings.Join(out, ",")
	}
	for _, c := range []struct {
		name, last, want string
		hosts            []*pgconn.FallbackConfig
	}{
		{"none passed yet", "", "h1,h2,h3", hosts("h1", "h2", "h3")},
		{"the first passed last", "h1:5432", "h1,h2,h3", hosts("h1", "h2", "h3")},
		{"the second passed last", "h2:5432", "h2,h1,h3", hosts("h1", "h2", "h3")},
		{"with and without TLS", "h2:5432", "h2,h2,h1,h1", hosts("h1", "h1", "h2", "h2")},
		{"a host no longer listed", "h9:5432", "h1,h2", hosts("h1", "h2")},
		{"another port of the same host", "h1:6432", "h1,h2", hosts("h1", "h2")},
	} {
		if got := names(preferHost(c.hosts, c.last)); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

// TestConnectTimeoutDefault: a URL of several hosts gives up on each after
// a second by default, one host after five seconds; the URL's own
// connect_timeout wins.
func TestConnectTimeoutDefault(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ url, want string }{
		{"postgres://pds@db/pds", "5"},
		{"postgres://pds@db1,db2/pds?target_session_attrs=read-write", "1"},
		{"postgres://pds@db1:5432,db2:5433/pds", "1"},
		{"postgres://pds@db1,db2/pds?connect_timeout=3", "3"},
	} {
		got, err := withConnectTimeout(c.url)
		if err != nil {
			t.Fatal(err)
		}
		_, q, err := parseURL(got)
		if err != nil {
			t.Fatal(err)
		}
		if q.Get("connect_timeout") != c.want {
			t.Errorf("%s: connect_timeout %q, want %s", c.url, q.Get("connect_timeout"), c.want)
		}
	}
}

// TestSeveralHosts: a host tried with and without TLS (sslmode=prefer) is
// one host; two ports are two.
func TestSeveralHosts(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		url  string
		want bool
	}{
		{"postgres://pds@db/pds", false},
		{"postgres://pds@db/pds?sslmode=disable", false},
		{"postgres://pds@db1,db2/pds", true},
		{"postgres://pds@db:5432,db:5433/pds?sslmode=disable", true},
	} {
		cfg, err := pgconn.ParseConfig(c.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := severalHosts(cfg); got != c.want {
			t.Errorf("%s: %v, want %v", c.url, got, c.want)
		}
	}
}
