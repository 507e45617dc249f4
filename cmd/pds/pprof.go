package main

import (
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// servePprof serves Go's runtime profiles (net/http/pprof) on ln, a
// listener of its own, so that a server can be profiled under load as it
// runs, from outside (pdsbench does, over its measured rows). It sets no
// write timeout: a CPU profile or a trace answers after the seconds it was
// asked for. It returns what stops it.
func servePprof(ln net.Listener, log *slog.Logger) (stop func()) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: errorLog(log)}
	go func() { _ = hs.Serve(ln) }()
	log.Info("serving pprof", "addr", ln.Addr().String(), "path", "/debug/pprof/")
	return func() { _ = hs.Close() }
}
