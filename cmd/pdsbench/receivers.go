package main

import (
	"crypto/x509"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pds-dev/pds/pkg/webhookverify"
)

// The delivery rows' receivers, on loopback in this process.

// counter is an HTTPS receiver that counts what it got and when.
type counter struct {
	srv         *httptest.Server
	n           atomic.Int64
	want        int64
	mu          sync.Mutex
	first, last time.Time
	done        chan struct{}
	delay       time.Duration
	quit        chan struct{}
}

func newCounter(want int, delay time.Duration) *counter {
	c := &counter{want: int64(want), done: make(chan struct{}), delay: delay, quit: make(chan struct{})}
	c.srv = httptest.NewUnstartedServer(http.HandlerFunc(c.serve))
	c.srv.EnableHTTP2 = true
	c.srv.StartTLS()
	return c
}

func (c *counter) serve(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	if c.delay > 0 {
		select {
		case <-time.After(c.delay):
		case <-r.Context().Done():
			return
		case <-c.quit:
			return
		}
	}
	if r.Header.Get(webhookverify.HeaderSignature) == "" {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	now := time.Now()
	c.mu.Lock()
	if c.first.IsZero() {
		c.first = now
	}
	c.last = now
	if c.n.Add(1) == c.want {
		close(c.done)
	}
	c.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (c *counter) reset(want int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n.Store(0)
	c.want = int64(want)
	c.first, c.last = time.Time{}, time.Time{}
	c.done = make(chan struct{})
}

func (c *counter) finished() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.done
}

func (c *counter) span() (time.Time, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.first, c.last
}

func (c *counter) close() {
	close(c.quit)
	c.srv.Close()
}

func (c *counter) url() string { return c.srv.URL + "/hooks/pds" }

// blackHole accepts connections and never answers on them.
type blackHole struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newBlackHole() (*blackHole, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b := &blackHole{ln: ln}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			b.mu.Lock()
			b.conns = append(b.conns, conn)
			b.mu.Unlock()
		}
	}()
	return b, nil
}

func (b *blackHole) close() {
	b.ln.Close()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.conns {
		c.Close()
	}
}

// writeCA writes the receivers' certificate (httptest serves one
// certificate, for 127.0.0.1) as PEM to path, for pds serve's
// --webhook-ca-file and the bare loop's --ca-file.
func writeCA(path string, cert *x509.Certificate) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o600)
}
