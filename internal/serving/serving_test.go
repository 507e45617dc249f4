package serving

import (
	"net/http"
	"testing"
)

func TestClientAddress(t *testing.T) {
	for _, tc := range []struct {
		name, header string
		peer         string
		values       []string
		want         string
	}{
		{"the peer, by default", "", "192.0.2.7:51234", nil, "192.0.2.7"},
		{"a header a client wrote is not believed by default", "", "192.0.2.7:51234", []string{"203.0.113.1"}, "192.0.2.7"},
		{"an IPv6 peer stands for its /64", "", "[2001:db8:1:2:3:4:5:6]:443", nil, "2001:db8:1:2::/64"},
		{"an IPv4 peer mapped into IPv6", "", "[::ffff:192.0.2.7]:443", nil, "192.0.2.7"},
		{"X-Forwarded-For: the address the proxy appended", "X-Forwarded-For", "10.0.0.2:80",
			[]string{"198.51.100.1, 203.0.113.5"}, "203.0.113.5"},
		{"X-Forwarded-For over two lines: the last", "X-Forwarded-For", "10.0.0.2:80",
			[]string{"198.51.100.1", "203.0.113.5"}, "203.0.113.5"},
		{"X-Real-IP", "X-Real-IP", "10.0.0.2:80", []string{"203.0.113.5"}, "203.0.113.5"},
		{"an address with its port", "X-Forwarded-For", "10.0.0.2:80", []string{"203.0.113.5:4711"}, "203.0.113.5"},
		{"an IPv6 address in brackets", "X-Forwarded-For", "10.0.0.2:80", []string{"[2001:db8::9]"}, "2001:db8::/64"},
		{"Forwarded: for= of the last element", "Forwarded", "10.0.0.2:80",
			[]string{`for=192.0.2.60;proto=http;by=203.0.113.43, for="[2001:db8:cafe::17]:4711"`}, "2001:db8:cafe::/64"},
		{"the header absent: the peer", "X-Forwarded-For", "10.0.0.2:80", nil, "10.0.0.2"},
		{"no address in the header: the peer", "X-Forwarded-For", "10.0.0.2:80", []string{"unknown"}, "10.0.0.2"},
		{"Forwarded without for=: the peer", "Forwarded", "10.0.0.2:80", []string{"proto=https"}, "10.0.0.2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := http.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = tc.peer
			for _, v := range tc.values {
				name := tc.header
				if name == "" {
					name = "X-Forwarded-For"
				}
				r.Header.Add(name, v)
			}
			if got := (Settings{ClientAddressHeader: tc.header}).ClientAddress(r); got != tc.want {
				t.Fatalf("ClientAddress = %q, want %q", got, tc.want)
			}
		})
	}
}
