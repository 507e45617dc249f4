package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// The ceilings the ratios divide by, each in a process of its own, so
// that nothing of pds (its garbage collector, caches, background work)
// lowers them, and they take nothing from the server they are compared
// with: this program again, with the hidden subcommand
//
//	pdsbench ceiling respond --addr A --body FILE [--status 200]
//	pdsbench ceiling signed-posts --url U --ca-file F [--count N --workers 8 --http2]
//
// respond answers every request with the body of FILE (Get Person's JSON
// for row 6, a breadcrumb's for row 8); signed-posts is the delivery rows'
// bare loop (delivery.go), which prints what it took and exits.
var ceilings = map[string]func(ctx context.Context, fs *flag.FlagSet, args []string) error{
	"respond":      respondCeiling,
	"signed-posts": signedPostsCeiling,
}

func runCeiling(ctx context.Context, args []string) error {
	if len(args) == 0 || ceilings[args[0]] == nil {
		return errors.New("ceiling: respond or signed-posts")
	}
	fs := flag.NewFlagSet("pdsbench ceiling "+args[0], flag.ContinueOnError)
	return ceilings[args[0]](ctx, fs, args[1:])
}

// startCeiling runs the ceiling kind in a process of its own, serving on
// a free loopback port, its output to dir/ceiling-NAME.log.
func startCeiling(dir, name, kind string, args ...string) (*process, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	return startProcess("ceiling "+name, filepath.Join(dir, "ceiling-"+name+".log"), addr, "", nil, self,
		append([]string{"ceiling", kind, "--addr", addr}, args...)...)
}

// startRespondCeiling runs a respond ceiling answering status with body.
func startRespondCeiling(dir, name string, status int, body []byte) (*process, error) {
	file := filepath.Join(dir, "ceiling-"+name+".json")
	if err := os.WriteFile(file, body, 0o600); err != nil {
		return nil, err
	}
	return startCeiling(dir, name, "respond", "--body", file, "--status", strconv.Itoa(status))
}

// serveCeiling serves h on addr, with pds serve's timeouts, until ctx
// ends (SIGTERM).
func serveCeiling(ctx context.Context, addr string, h http.Handler) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 60 * time.Second, IdleTimeout: 120 * time.Second}
	go func() {
		<-ctx.Done()
		hs.Close()
	}()
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func respondCeiling(ctx context.Context, fs *flag.FlagSet, args []string) error {
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	bodyFile := fs.String("body", "", "the body of every answer")
	status := fs.Int("status", http.StatusOK, "the status of every answer")
	if err := fs.Parse(args); err != nil {
		return err
	}
	body, err := os.ReadFile(*bodyFile)
	if err != nil {
		return err
	}
	return serveCeiling(ctx, *addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(*status)
		_, _ = w.Write(body)
	}))
}

// signedPostsCeiling runs the bare signed-POST loop and prints, as one
// JSON line, the seconds it took.
func signedPostsCeiling(ctx context.Context, fs *flag.FlagSet, args []string) error {
	target := fs.String("url", "", "the receiver")
	caFile := fs.String("ca-file", "", "the receiver's certificate (PEM)")
	count := fs.Int("count", deliveryPersons, "POSTs to send")
	workers := fs.Int("workers", bareLoopWorkers, "POSTs at once, each worker on a connection of its own")
	h2 := fs.Bool("http2", false, "over HTTP/2 (else HTTP/1.1)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	took, err := signedPosts(ctx, *target, *caFile, *count, *workers, *h2)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]float64{"seconds": took.Seconds()})
}

// signedPostsResult reads what signedPostsCeiling printed.
func signedPostsResult(out []byte) (time.Duration, error) {
	var res struct{ Seconds float64 }
	if err := json.Unmarshal(out, &res); err != nil || res.Seconds <= 0 {
		return 0, fmt.Errorf("the signed-POST loop printed %q", out)
	}
	return time.Duration(res.Seconds * float64(time.Second)), nil
}
