package main

import (
	"errors"
	"net"
	"net/http"
	"sync"
	"time"
)

// retiringListener is the API's listener, made to stop taking connections
// while cutting as few as possible. Closing a listening socket resets the
// connections the kernel has completed and queued for accept: their
// clients connected and sent a request, and see it cut. Retire first
// shrinks the queue (stopConnecting), hands the server what is queued,
// and only then closes the socket.
type retiringListener struct {
	*net.TCPListener
	retiring chan struct{} // closed by retire
	drained  chan struct{} // closed once the queue is empty and the socket closed
	closed   chan struct{} // closed by Close
	once     sync.Once
	drain    sync.Once
}

// queueDrain is how long retire takes queued connections: handshakes
// under way when it began complete within a round trip.
const queueDrain = 20 * time.Millisecond

func newRetiringListener(ln net.Listener) net.Listener {
	tcp, ok := ln.(*net.TCPListener)
	if !ok {
		return ln
	}
	return &retiringListener{TCPListener: tcp, retiring: make(chan struct{}), drained: make(chan struct{}),
		closed: make(chan struct{})}
}

// retire stops new connections and returns once the server has the queued
// ones (or after a second, should nothing accept them).
func (l *retiringListener) retire() {
	if rc, err := l.SyscallConn(); err == nil {
		_ = rc.Control(stopConnecting)
	}
	_ = l.SetDeadline(time.Now().Add(queueDrain))
	close(l.retiring)
	select {
	case <-l.drained:
	case <-time.After(time.Second):
	}
}

func (l *retiringListener) Accept() (net.Conn, error) {
	c, err := l.TCPListener.Accept()
	select {
	case <-l.retiring:
	default:
		return c, err
	}
	if err == nil {
		return c, nil
	}
	if !isTimeout(err) {
		return nil, err
	}
	// The queue is empty: the socket closes, and the server stops
	// accepting when it shuts down (Close).
	l.drain.Do(func() {
		_ = l.TCPListener.Close()
		close(l.drained)
	})
	<-l.closed
	return nil, net.ErrClosed
}

// Close ends the listener; the server calls it when it shuts down.
func (l *retiringListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	err := l.TCPListener.Close()
	if errors.Is(err, net.ErrClosed) {
		return nil // retire closed it already
	}
	return err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// newConns follows the connections that have not sent a request yet
// (http.StateNew), for the server's ConnState hook. net/http drops a
// request it reads once it is shutting down, without an answer: the
// server shuts down only once every connection it accepted has sent its
// request (waitRequests).
type newConns struct {
	mu    sync.Mutex
	conns map[net.Conn]bool
}

func (n *newConns) track(c net.Conn, state http.ConnState) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if state == http.StateNew {
		if n.conns == nil {
			n.conns = map[net.Conn]bool{}
		}
		n.conns[c] = true
		return
	}
	delete(n.conns, c)
}

// waitRequests waits until every connection accepted has sent its
// request, at most until the deadline.
func (n *newConns) waitRequests(deadline time.Time) {
	for time.Now().Before(deadline) {
		n.mu.Lock()
		waiting := len(n.conns)
		n.mu.Unlock()
		if waiting == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
}
