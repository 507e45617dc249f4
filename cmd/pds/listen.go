package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
)

// listen binds addr before anything else happens: a taken address must
// cost the user no database, account, key or subscription. flag is the
// setting that chose the address and value what the user gave it (for
// pds serve the address itself, for pds webhooks listen a port).
func listen(flag, value, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		reason := err
		var op *net.OpError
		if errors.As(err, &op) && op.Err != nil {
			reason = op.Err // "bind: address already in use", without the repetition
		}
		where := ""
		if value != addr {
			where = " on " + addr
		}
		return nil, fmt.Errorf("--%s (%s) %q: cannot listen%s: %w; e.g. --%s %s",
			flag, envName(flag), value, where, reason, flag, settingExamples[flag])
	}
	return ln, nil
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
