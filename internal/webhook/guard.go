package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// The SSRF guard: a delivery may only reach a public address. The check runs
// when a subscription's target_url is set (every address its host resolves
// to must be public) and again on every connection, on the address actually
// dialled, so a name that resolves elsewhere later (DNS rebinding) is caught.

// refusedV4 are the IPv4 ranges that are not public unicast.
var refusedV4 = []refusedRange{
	{"0.0.0.0/8", "unspecified (this network)"},
	{"10.0.0.0/8", "private"},
	{"100.64.0.0/10", "carrier-grade NAT"},
	{"127.0.0.0/8", "loopback"},
	{"169.254.0.0/16", "link-local (includes cloud metadata 169.254.169.254)"},
	{"172.16.0.0/12", "private"},
	{"192.0.0.0/24", "reserved (IETF protocol assignments)"},
	{"192.0.2.0/24", "documentation"},
	{"192.88.99.0/24", "6to4 relay"},
	{"192.168.0.0/16", "private"},
	{"198.18.0.0/15", "benchmarking"},
	{"198.51.100.0/24", "documentation"},
	{"203.0.113.0/24", "documentation"},
	{"224.0.0.0/4", "multicast"},
	{"240.0.0.0/4", "reserved (includes broadcast)"},
}

// refusedV6 are the ranges refused inside 2000::/3, the only IPv6 block
// with public unicast; everything outside it is refused by refusedV6Outside.
var refusedV6 = []refusedRange{
	{"2001::/32", "Teredo"},
	{"2001::/23", "reserved (IETF protocol assignments)"},
	{"2001:db8::/32", "documentation"},
	{"2002::/16", "6to4"},
	{"3fff::/20", "documentation"},
}

// refusedV6Outside names the well-known ranges outside 2000::/3; an address
// in none of them is still refused as reserved.
var refusedV6Outside = []refusedRange{
	{"::/128", "unspecified"},
	{"::1/128", "loopback"},
	{"64:ff9b::/96", "NAT64"},
	{"64:ff9b:1::/48", "NAT64"},
	{"100::/64", "discard-only"},
	{"fc00::/7", "unique local (fc00::/7)"},
	{"fe80::/10", "link-local"},
	{"fec0::/10", "site-local (deprecated)"},
	{"ff00::/8", "multicast"},
}

var globalUnicastV6 = netip.MustParsePrefix("2000::/3")

type refusedRange struct {
	prefix string
	reason string
}

// prefixes parses the tables once.
type prefixTable []struct {
	p      netip.Prefix
	reason string
}

func compile(ranges []refusedRange) prefixTable {
	t := make(prefixTable, len(ranges))
	for i, r := range ranges {
		t[i].p, t[i].reason = netip.MustParsePrefix(r.prefix), r.reason
	}
	return t
}

func (t prefixTable) match(a netip.Addr) (string, bool) {
	for _, r := range t {
		if r.p.Contains(a) {
			return r.reason, true
		}
	}
	return "", false
}

var (
	v4Table        = compile(refusedV4)
	v6Table        = compile(refusedV6)
	v6OutsideTable = compile(refusedV6Outside)
)

// RefusedError says why an address may not be a delivery target.
type RefusedError struct {
	Addr   netip.Addr
	Reason string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s is not a public address (%s)", e.Addr, e.Reason)
}

// CheckAddr returns a *RefusedError unless a is a public unicast address.
func CheckAddr(a netip.Addr) error {
	if !a.IsValid() {
		return &RefusedError{Addr: a, Reason: "not an IP address"}
	}
	a = a.WithZone("")
	if a.Is4In6() {
		if err := CheckAddr(a.Unmap()); err != nil {
			var re *RefusedError
			errors.As(err, &re)
			return &RefusedError{Addr: a, Reason: "IPv4-mapped " + re.Addr.String() + ", " + re.Reason}
		}
		return nil
	}
	if a.Is4() {
		if reason, ok := v4Table.match(a); ok {
			return &RefusedError{Addr: a, Reason: reason}
		}
		return nil
	}
	if !globalUnicastV6.Contains(a) {
		if reason, ok := v6OutsideTable.match(a); ok {
			return &RefusedError{Addr: a, Reason: reason}
		}
		return &RefusedError{Addr: a, Reason: "reserved"}
	}
	if reason, ok := v6Table.match(a); ok {
		return &RefusedError{Addr: a, Reason: reason}
	}
	return nil
}

// Resolver finds the addresses of a host name.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Guard applies the address rules to target URLs and connections.
type Guard struct {
	// AllowPrivate turns the rules off, for local development and tests.
	AllowPrivate bool
	// LoopbackOnly replaces the rules with their opposite for the one kind
	// of subscription that needs it, a local listener's (pds webhooks
	// listen): a loopback host, plain http allowed, and connections to
	// loopback addresses only, whatever AllowPrivate says.
	LoopbackOnly bool
	// Resolver resolves host names; nil means the system resolver.
	Resolver Resolver
	// ConnectTimeout bounds one TCP connection.
	ConnectTimeout time.Duration
}

func (g *Guard) resolver() Resolver {
	if g.Resolver != nil {
		return g.Resolver
	}
	return net.DefaultResolver
}

// CheckURL validates a target URL: https, a host, and (unless private
// targets are allowed) only public addresses behind that host. With private
// targets allowed, plain http is accepted on a loopback host (localhost or
// a loopback address literal) and nowhere else: a receiver under
// development needs no certificate, and nothing leaves the machine
// unencrypted. The error says what is wrong in words a person can act on.
func (g *Guard) CheckURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() {
		return errors.New("target_url must be an absolute URL such as https://example.com/hooks/pds")
	}
	host := u.Hostname()
	if g.LoopbackOnly {
		if (u.Scheme != "http" && u.Scheme != "https") || !IsLoopbackHost(host) {
			return errors.New("a local listener's target_url must be http or https on loopback (localhost, 127.0.0.1, [::1])")
		}
		return nil
	}
	switch {
	case u.Scheme == "https":
	case !g.AllowPrivate:
		return fmt.Errorf("target_url must use https, not %q", u.Scheme)
	case u.Scheme != "http":
		return fmt.Errorf("target_url must use https (or http on loopback), not %q", u.Scheme)
	case host != "" && !IsLoopbackHost(host):
		return fmt.Errorf("target_url may use http only on loopback (localhost, 127.0.0.1, [::1]) with --webhook-allow-private; use https for %s", host)
	}
	if host == "" {
		return errors.New("target_url has no host")
	}
	if port := u.Port(); port != "" {
		if _, err := net.LookupPort("tcp", port); err != nil {
			return fmt.Errorf("target_url has an invalid port %q", port)
		}
	}
	if g.AllowPrivate {
		return nil
	}
	addrs, err := g.lookup(ctx, host)
	if err != nil {
		return fmt.Errorf("the host %s of target_url does not resolve: %v", host, err)
	}
	for _, a := range addrs {
		var refused *RefusedError
		if err := CheckAddr(a); errors.As(err, &refused) {
			return fmt.Errorf("the host %s of target_url resolves to %s, which is not a public address (%s)",
				host, refused.Addr, refused.Reason)
		} else if err != nil {
			return err
		}
	}
	return nil
}

// IsLoopbackHost reports whether a URL's host (without brackets or port)
// names this machine by loopback: the name localhost, or an address in
// 127.0.0.0/8 or ::1 (IPv4-mapped forms included).
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	a, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return err == nil && a.Zone() == "" && a.Unmap().IsLoopback()
}

func (g *Guard) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return []netip.Addr{a}, nil
	}
	addrs, err := g.resolver().LookupNetIP(ctx, "ip", host)
	if err != nil {
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) {
			return nil, errors.New(dnsErr.Err)
		}
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, errors.New("no addresses")
	}
	return addrs, nil
}

// DialContext resolves addr's host and connects to its addresses in turn.
// Each connection is checked on the address actually dialled (the dialer's
// Control hook runs after resolution, just before connect).
func (g *Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	addrs, err := g.lookup(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	d := net.Dialer{Timeout: g.ConnectTimeout, Control: g.control}
	var errs []error
	for _, a := range addrs {
		c, err := d.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// control refuses a connection whose remote address is not public (or,
// LoopbackOnly, not loopback).
func (g *Guard) control(network, address string, _ syscall.RawConn) error {
	if g.AllowPrivate && !g.LoopbackOnly {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("refused connection to %s: %v", address, err)
	}
	if g.LoopbackOnly {
		if ap.Addr().WithZone("").Unmap().IsLoopback() {
			return nil
		}
		return fmt.Errorf("refused connection to %s: a local listener's deliveries reach loopback addresses only", ap.Addr())
	}
	return CheckAddr(ap.Addr())
}
