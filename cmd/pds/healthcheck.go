package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/spf13/pflag"
)

// healthcheckTimeout bounds the whole check; /readyz itself gives the
// database 2 s at most.
const healthcheckTimeout = 5 * time.Second

// healthcheck asks the pds serve of this machine (or container) whether it
// is ready: exit 0 when /readyz answers 200, 1 otherwise. It is the image's
// HEALTHCHECK, since a scratch image has no curl. It reads the variables
// pds serve reads, so that it finds the server the same environment
// configured.
func (e cmdEnv) healthcheck(fs *pflag.FlagSet) func([]string) error {
	addr := fs.String("addr", defaultAddr, "the address pds serve listens on; the check asks 127.0.0.1 at its port (or the address itself, when it names one)")
	tlsCert := fs.String("tls-cert", "", "pds serve's certificate: when set the server speaks HTTPS only, and so does the check (without verifying the certificate: the server is this machine)")
	var asJSON bool
	jsonFlag(fs, &asJSON, "machine-readable output: one JSON object")
	return func([]string) error {
		url, err := readyzURL(*addr, *tlsCert != "")
		if err != nil {
			return err
		}
		status, err := getStatus(url)
		if asJSON {
			out := map[string]any{"url": url, "ready": err == nil && status == http.StatusOK}
			if err != nil {
				out["error"] = err.Error()
			} else {
				out["status"] = status
			}
			if perr := e.printJSON(out); perr != nil {
				return perr
			}
		}
		if err != nil {
			return fmt.Errorf("healthcheck: %s: %w", url, err)
		}
		if status != http.StatusOK {
			return fmt.Errorf("healthcheck: %s answered %d %s", url, status, http.StatusText(status))
		}
		if !asJSON {
			fmt.Fprintln(e.stdout, "ready")
		}
		return nil
	}
}

// readyzURL is the /readyz of the server listening on addr, as seen from
// the same machine: 127.0.0.1 when addr leaves the host open (":8080",
// "0.0.0.0:8080") or names it (a name may resolve to any address), the
// address itself when addr binds one IP only.
func readyzURL(addr string, https bool) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", badSetting("addr", addr, "not host:port")
	}
	n, err := net.LookupPort("tcp", port)
	if err != nil {
		return "", badSetting("addr", addr, "no such port")
	}
	if n == 0 {
		return "", badSetting("addr", addr, "port 0 is any free port; the check needs the one pds serve listens on")
	}
	target := "127.0.0.1"
	if ip := net.ParseIP(host); ip != nil && !ip.IsUnspecified() {
		target = ip.String()
	}
	scheme := "http"
	if https {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(target, strconv.Itoa(n)) + "/readyz", nil
}

// getStatus GETs url and returns the answer's status.
func getStatus(url string) (int, error) {
	client := &http.Client{
		Timeout: healthcheckTimeout,
		Transport: &http.Transport{
			Proxy:             nil, // an HTTP_PROXY of the container must not take the check elsewhere
			DisableKeepAlives: true,
			// The server is this machine, and its certificate names the
			// service's public host, not 127.0.0.1: verifying would fail
			// and prove nothing, and /readyz sends nothing secret.
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12},
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return errors.New("redirected") },
	}
	res, err := client.Get(url)
	if err != nil {
		return 0, err
	}
	res.Body.Close()
	return res.StatusCode, nil
}
