package webhook

import (
	"crypto/tls"
	"net/http"
	"time"
)

// NewClient builds the delivery client: every connection through the
// guard, no proxy (a proxy would dial for us, past the guard), redirects
// never followed, one timeout for the whole attempt, and connections kept
// alive between attempts.
func NewClient(s Settings) (*http.Client, error) {
	return newClient(s, s.Guard())
}

// NewLocalClient builds the client of local listeners' deliveries (pds
// webhooks listen): as NewClient's, but its guard lets connections reach
// loopback addresses and nothing else (LoopbackOnly).
func NewLocalClient(s Settings) (*http.Client, error) {
	return newClient(s, s.LocalGuard())
}

func newClient(s Settings, g *Guard) (*http.Client, error) {
	s = s.WithDefaults()
	roots, err := s.rootCAs()
	if err != nil {
		return nil, err
	}
	transport := &http.Transport{
		Proxy:               nil,
		DialContext:         g.DialContext,
		TLSClientConfig:     &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}},
		TLSHandshakeTimeout: s.Timeout,
		// HTTP/1.1 with keep-alive, one connection per attempt in flight:
		// every receiver speaks it, and the attempts of a subscription
		// then run on connections of their own, their TLS spread over the
		// cores of both ends. Multiplexed on one HTTP/2 connection they
		// took turns on it, and one loopback receiver got markedly fewer
		// deliveries a second than over HTTP/1.1 (issue 47). A non-nil
		// empty TLSNextProto turns HTTP/2 off.
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{},
		// Connections stay open between attempts, as many per receiver as
		// the worker may run at once; each was checked by the guard when
		// it was dialled.
		MaxIdleConns:        max(100, 2*s.Concurrency),
		MaxIdleConnsPerHost: s.Concurrency,
		IdleConnTimeout:     90 * time.Second,
	}
	return &http.Client{
		Transport: transport,
		Timeout:   s.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}, nil
}
