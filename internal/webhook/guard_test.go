package webhook_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/pds-dev/pds/internal/webhook"
)

func TestCheckAddrRefusesEveryNonPublicRange(t *testing.T) {
	t.Parallel()
	refused := map[string]string{
		"0.0.0.0":                  "unspecified",
		"10.1.2.3":                 "private",
		"100.64.0.1":               "carrier-grade NAT",
		"100.127.255.254":          "carrier-grade NAT",
		"127.0.0.1":                "loopback",
		"127.8.9.10":               "loopback",
		"169.254.169.254":          "link-local",
		"172.16.0.1":               "private",
		"172.31.255.255":           "private",
		"192.0.0.8":                "reserved",
		"192.0.2.10":               "documentation",
		"192.88.99.1":              "6to4",
		"192.168.1.1":              "private",
		"198.18.0.1":               "benchmarking",
		"198.19.255.255":           "benchmarking",
		"198.51.100.7":             "documentation",
		"203.0.113.9":              "documentation",
		"224.0.0.251":              "multicast",
		"239.255.255.250":          "multicast",
		"240.0.0.1":                "reserved",
		"255.255.255.255":          "reserved",
		"::":                       "unspecified",
		"::1":                      "loopback",
		"::ffff:127.0.0.1":         "IPv4-mapped 127.0.0.1, loopback",
		"::ffff:169.254.169.254":   "IPv4-mapped 169.254.169.254, link-local",
		"::ffff:10.0.0.1":          "IPv4-mapped 10.0.0.1, private",
		"::127.0.0.1":              "reserved",
		"64:ff9b::8.8.8.8":         "NAT64",
		"64:ff9b:1::1":             "NAT64",
		"100::1":                   "discard-only",
		"fc00::1":                  "unique local",
		"fd12:3456:789a::1":        "unique local",
		"fe80::1":                  "link-local",
		"fe80::1%eth0":             "link-local",
		"fec0::1":                  "site-local",
		"ff02::1":                  "multicast",
		"2001::1":                  "Teredo",
		"2001:0:4136:e378::1":      "Teredo",
		"2001:2::1":                "reserved",
		"2001:db8::1":              "documentation",
		"2002:7f00:1::1":           "6to4",
		"2002:808:808::1":          "6to4",
		"3fff::1":                  "documentation",
		"4000::1":                  "reserved",
		"fd00:ec2::254":            "unique local",
		"::ffff:100.64.0.1":        "carrier-grade NAT",
		"::ffff:0:7f00:1":          "reserved",
		"0:0:0:0:0:ffff:c0a8:0101": "private",
	}
	for addr, reason := range refused {
		a := netip.MustParseAddr(addr)
		err := webhook.CheckAddr(a)
		var re *webhook.RefusedError
		if !errors.As(err, &re) || !strings.Contains(re.Reason, reason) {
			t.Errorf("%s: %v, want refused as %q", addr, err, reason)
		}
	}
	for _, addr := range []string{"8.8.8.8", "1.1.1.1", "93.184.215.14", "100.63.255.255", "100.128.0.0", "172.32.0.1",
		"192.169.0.1", "2606:4700:4700::1111", "2a00:1450:4001:80b::200e", "::ffff:8.8.8.8"} {
		if err := webhook.CheckAddr(netip.MustParseAddr(addr)); err != nil {
			t.Errorf("%s is public, refused: %v", addr, err)
		}
	}
	if err := webhook.CheckAddr(netip.Addr{}); err == nil {
		t.Error("the zero address is accepted")
	}
}

// fakeResolver answers from a table; a missing name does not resolve.
type fakeResolver map[string][]string

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	addrs, ok := f[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []netip.Addr
	for _, a := range addrs {
		out = append(out, netip.MustParseAddr(a))
	}
	return out, nil
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	g := &webhook.Guard{Resolver: fakeResolver{
		"public.example":   {"93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"},
		"internal.example": {"10.0.0.5"},
		"mixed.example":    {"93.184.215.14", "127.0.0.1"},
		"metadata.example": {"169.254.169.254"},
		"mapped.example":   {"::ffff:127.0.0.1"},
	}}
	ctx := context.Background()
	for _, ok := range []string{"https://public.example/hook", "https://public.example:8443/x?y=1", "https://93.184.215.14/hook"} {
		if err := g.CheckURL(ctx, ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for url, want := range map[string]string{
		"http://public.example/hook":     "must use https",
		"ftp://public.example/":          "must use https",
		"public.example/hook":            "absolute URL",
		"https:///nohost":                "no host",
		"https://internal.example/hook":  "resolves to 10.0.0.5, which is not a public address (private)",
		"https://mixed.example/hook":     "resolves to 127.0.0.1, which is not a public address (loopback)",
		"https://metadata.example/":      "169.254.169.254",
		"https://mapped.example/":        "IPv4-mapped 127.0.0.1",
		"https://127.0.0.1/hook":         "loopback",
		"https://[::1]/hook":             "loopback",
		"https://[fd00::1]/hook":         "unique local",
		"https://100.64.1.1/hook":        "carrier-grade NAT",
		"https://nowhere.example/hook":   "does not resolve: no such host",
		"https://public.example:99999/x": "invalid port",
		"https://public.example:abc/x":   "absolute URL",
	} {
		err := g.CheckURL(ctx, url)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error containing %q", url, err, want)
		}
	}
	// The name localhost, through the system resolver (the hosts file).
	system := &webhook.Guard{}
	for _, u := range []string{"https://localhost/hook", "https://localhost:8443/hook", "https://LOCALHOST/hook"} {
		if err := system.CheckURL(ctx, u); err == nil || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("%s: %v, want a loopback refusal", u, err)
		}
	}
	open := &webhook.Guard{AllowPrivate: true}
	if err := open.CheckURL(ctx, "https://127.0.0.1:8443/hook"); err != nil {
		t.Errorf("AllowPrivate refused a loopback target: %v", err)
	}
}

// TestCheckURLPlainHTTP: http is a target only with private targets
// allowed and only on a loopback host; anywhere else, and without the
// setting everywhere, it is refused, each time saying what would do.
func TestCheckURLPlainHTTP(t *testing.T) {
	t.Parallel()
	resolver := fakeResolver{"public.example": {"93.184.215.14"}, "lan.example": {"192.168.1.5"}, "sneaky.example": {"127.0.0.1"},
		"localhost": {"127.0.0.1", "::1"}}
	strict := &webhook.Guard{Resolver: resolver}
	open := &webhook.Guard{AllowPrivate: true, Resolver: resolver}
	const (
		httpsOnly    = `target_url must use https, not "http"`
		loopbackOnly = "target_url may use http only on loopback (localhost, 127.0.0.1, [::1]) with --webhook-allow-private; use https for "
	)
	for _, c := range []struct {
		url          string
		strict, open string // "" accepts; else part of the error
	}{
		{"http://localhost:3000/hook", httpsOnly, ""},
		{"http://LOCALHOST/hook", httpsOnly, ""},
		{"http://localhost./hook", httpsOnly, ""},
		{"http://127.0.0.1:3000/hook", httpsOnly, ""},
		{"http://127.8.9.10/hook", httpsOnly, ""},
		{"http://[::1]:3000/hook", httpsOnly, ""},
		{"http://[::ffff:127.0.0.1]/hook", httpsOnly, ""},
		{"http://public.example/hook", httpsOnly, loopbackOnly + "public.example"},
		{"http://93.184.215.14/hook", httpsOnly, loopbackOnly + "93.184.215.14"},
		{"http://192.168.1.5/hook", httpsOnly, loopbackOnly + "192.168.1.5"},
		{"http://10.0.0.1/hook", httpsOnly, loopbackOnly + "10.0.0.1"},
		{"http://169.254.169.254/latest", httpsOnly, loopbackOnly + "169.254.169.254"},
		{"http://lan.example/hook", httpsOnly, loopbackOnly + "lan.example"},
		// A name is loopback only when it is localhost itself, whatever
		// it resolves to.
		{"http://sneaky.example/hook", httpsOnly, loopbackOnly + "sneaky.example"},
		{"http://app.localhost/hook", httpsOnly, loopbackOnly + "app.localhost"},
		{"http://[fe80::1%25lo]/hook", httpsOnly, loopbackOnly},
		{"http://0.0.0.0:3000/hook", httpsOnly, loopbackOnly + "0.0.0.0"},
		{"http:///nohost", httpsOnly, "no host"},
		{"ftp://localhost/", `target_url must use https, not "ftp"`, `target_url must use https (or http on loopback), not "ftp"`},
		{"https://public.example/hook", "", ""},
		{"https://localhost:8443/hook", "loopback", ""},
	} {
		for _, g := range []struct {
			name  string
			guard *webhook.Guard
			want  string
		}{{"strict", strict, c.strict}, {"allow-private", open, c.open}} {
			err := g.guard.CheckURL(context.Background(), c.url)
			switch {
			case g.want == "" && err != nil:
				t.Errorf("%s %s: %v, want accepted", g.name, c.url, err)
			case g.want != "" && (err == nil || !strings.Contains(err.Error(), g.want)):
				t.Errorf("%s %s: %v, want an error containing %q", g.name, c.url, err, g.want)
			}
		}
	}
}

// TestDialRefusesTheAddressActuallyDialled: a name that passed the check
// when the subscription was saved but resolves to loopback when a delivery
// connects (DNS rebinding) is refused at connect time, before any byte is
// sent; so is an address literal.
func TestDialRefusesTheAddressActuallyDialled(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())

	resolver := fakeResolver{"rebind.example": {"93.184.215.14"}}
	g := &webhook.Guard{Resolver: resolver}
	if err := g.CheckURL(context.Background(), "https://rebind.example:"+port+"/hook"); err != nil {
		t.Fatalf("at creation the name is public: %v", err)
	}
	resolver["rebind.example"] = []string{"127.0.0.1"}
	for _, addr := range []string{"rebind.example:" + port, "127.0.0.1:" + port, "[::ffff:127.0.0.1]:" + port} {
		_, err := g.DialContext(context.Background(), "tcp", addr)
		var re *webhook.RefusedError
		if !errors.As(err, &re) || !strings.Contains(re.Reason, "loopback") {
			t.Errorf("dial %s: %v, want a loopback refusal", addr, err)
		}
	}
	select {
	case <-accepted:
		t.Fatal("the refused dial reached the listener")
	default:
	}
	open := &webhook.Guard{AllowPrivate: true, Resolver: resolver}
	c, err := open.DialContext(context.Background(), "tcp", "rebind.example:"+port)
	if err != nil {
		t.Fatalf("AllowPrivate dial: %v", err)
	}
	c.Close()
	<-accepted
}

// TestLoopbackOnlyGuard: a local listener's guard dials loopback and
// nothing else, even with private targets allowed, and takes only loopback
// targets (plain http included).
func TestLoopbackOnlyGuard(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	resolver := fakeResolver{"public.example": {"93.184.215.14"}, "rebind.example": {"127.0.0.1"}}
	for _, g := range []*webhook.Guard{
		{LoopbackOnly: true, Resolver: resolver},
		{LoopbackOnly: true, AllowPrivate: true, Resolver: resolver},
	} {
		for _, addr := range []string{"127.0.0.1:" + port, "[::ffff:127.0.0.1]:" + port, "rebind.example:" + port} {
			c, err := g.DialContext(context.Background(), "tcp", addr)
			if err != nil {
				t.Errorf("AllowPrivate %v: dial %s: %v", g.AllowPrivate, addr, err)
				continue
			}
			c.Close()
		}
		// Refused before connect: none of these is dialled.
		for _, addr := range []string{"192.0.2.1:80", "10.0.0.1:80", "169.254.169.254:80", "public.example:443", "[2001:db8::1]:80"} {
			_, err := g.DialContext(context.Background(), "tcp", addr)
			if err == nil || !strings.Contains(err.Error(), "loopback addresses only") {
				t.Errorf("AllowPrivate %v: dial %s: %v, want a refusal", g.AllowPrivate, addr, err)
			}
		}
		for url, ok := range map[string]bool{
			"http://127.0.0.1:" + port + "/": true, "https://localhost/x": true, "http://[::1]/": true,
			"http://public.example/": false, "https://10.0.0.1/": false, "ftp://127.0.0.1/": false,
		} {
			if err := g.CheckURL(context.Background(), url); (err == nil) != ok {
				t.Errorf("AllowPrivate %v: CheckURL %s: %v, want accepted %v", g.AllowPrivate, url, err, ok)
			}
		}
	}
}
