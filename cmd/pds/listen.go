package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// listen binds addr before anything else happens: a taken address must
// cost the user no database, account, key or subscription. flag is the
// setting that chose the address and value what the user gave it (for
// pds serve the address itself, for pds webhooks listen a port).
func listen(flag, value, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		where := ""
		if value != addr {
			where = " on " + addr
		}
		return nil, fmt.Errorf("--%s (%s) %q: cannot listen%s: %w; e.g. --%s %s",
			flag, envName(flag), value, where, unwrapOp(err), flag, otherAddress(flag, addr, err))
	}
	return ln, nil
}

// otherAddress is an example of the setting that chose addr, other than
// addr when addr was taken: the next port, or 0 for any free one.
func otherAddress(flag, addr string, err error) string {
	host, port, serr := net.SplitHostPort(addr)
	n, perr := strconv.Atoi(port)
	if !errors.Is(err, syscall.EADDRINUSE) || serr != nil || perr != nil || n == 0 || n == 65535 {
		return settingExamples[flag]
	}
	if flag == "port" {
		return fmt.Sprintf("%d (or 0 for any free port)", n+1)
	}
	return fmt.Sprintf("%s (or %s for any free port)", net.JoinHostPort(host, strconv.Itoa(n+1)), net.JoinHostPort(host, "0"))
}

// defaultAddr is where pds serve listens unless told: this machine's
// loopback interfaces alone, as a server a newcomer starts to try should;
// an image or a deploy names every interface (:8080).
const defaultAddr = "localhost:8080"

// listenAPI binds the address of --addr: "localhost" stands for both
// loopback interfaces, 127.0.0.1 and ::1 (the second when this machine has
// one), on the same port; any other address is bound as it is.
func listenAPI(addr string) ([]net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host != "localhost" {
		ln, err := listen("addr", addr, addr)
		if err != nil {
			return nil, err
		}
		return []net.Listener{ln}, nil
	}
	v4, err := listen("addr", addr, net.JoinHostPort("127.0.0.1", port))
	if err != nil {
		return nil, err
	}
	// The port chosen for :0, so that both answer on one.
	port = strconv.Itoa(v4.Addr().(*net.TCPAddr).Port)
	v6, err := net.Listen("tcp", net.JoinHostPort("::1", port))
	if err != nil {
		if noIPv6(err) {
			return []net.Listener{v4}, nil
		}
		v4.Close()
		return nil, fmt.Errorf("--addr (%s) %q: cannot listen on [::1]:%s: %w; e.g. --addr 127.0.0.1:%s (IPv4 alone)", envName("addr"), addr, port, unwrapOp(err), port)
	}
	return []net.Listener{v4, v6}, nil
}

// noIPv6 says that this machine has no IPv6 loopback to bind.
func noIPv6(err error) bool {
	return errors.Is(err, syscall.EADDRNOTAVAIL) || errors.Is(err, syscall.EAFNOSUPPORT) || errors.Is(err, syscall.EPROTONOSUPPORT)
}

// unwrapOp is a listen error without the operation it repeats.
func unwrapOp(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err
	}
	return err
}

// listening says where the listeners take connections, for people.
func listening(lns []net.Listener) string {
	var where []string
	for _, ln := range lns {
		where = append(where, ln.Addr().String())
	}
	return strings.Join(where, " and ")
}

// defaultPublicURL is where clients reach a server that listens on addr
// (as given) and was bound to bound: the host addr names, or localhost
// when it names none or every interface, and the port actually bound, so
// that ":0" yields the port chosen.
func defaultPublicURL(addr string, bound net.Addr, useTLS bool) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = ""
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	port := ""
	if tcp, ok := bound.(*net.TCPAddr); ok {
		port = strconv.Itoa(tcp.Port)
	}
	scheme := "http"
	if useTLS {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

// loadTLS reads the certificate and key of --tls-cert and --tls-key; both
// or neither must be given. It returns nil for plain HTTP.
func loadTLS(certFile, keyFile string) (*tls.Config, error) {
	switch {
	case certFile == "" && keyFile == "":
		return nil, nil
	case certFile == "" || keyFile == "":
		return nil, usageError{errors.New("--tls-cert and --tls-key (PDS_TLS_CERT, PDS_TLS_KEY) go together: give both files, or neither for plain HTTP; e.g. --tls-cert /etc/pds/cert.pem --tls-key /etc/pds/key.pem")}
	}
	for _, f := range [][2]string{{"tls-cert", certFile}, {"tls-key", keyFile}} {
		if _, err := os.Stat(f[1]); err != nil {
			return nil, badSetting(f[0], f[1], "cannot read it ("+errors.Unwrap(err).Error()+")")
		}
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, badSetting("tls-cert", certFile, fmt.Sprintf("with --tls-key %q: %v (both PEM files: the certificate chain and its private key)", keyFile, err))
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// loopbackNote says, of listeners on loopback addresses alone, that other
// machines cannot reach them and how to change that.
func loopbackNote(lns []net.Listener) string {
	for _, ln := range lns {
		if tcp, ok := ln.Addr().(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
			return ""
		}
	}
	return ": this machine alone (--addr :8080 listens on every interface)"
}
