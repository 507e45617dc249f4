package httpapi

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"regexp"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

type requestIDKey struct{}

// caller is filled in by authentication so that the request log can name
// the account and key id (never the key itself).
type caller struct {
	accountID, keyID string
	// gone holds the error a request ended with because its client went away.
	gone string
	// refused is the cause of a 503 for a database that could not serve.
	refused domain.Cause
}

type callerKey struct{}

var validRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// withRequestID echoes a sane X-Request-Id or makes one.
func (s *Server) withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !validRequestID.MatchString(id) {
			id = newRequestID()
		}
		w.Header()["X-Request-Id"] = []string{id}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id)))
	})
}

// newRequestID names a request: "req_" and 24 hex digits, random enough to
// tell requests apart in a log (they name no secret, so they come from the
// fast generator, not crypto/rand's system call).
func newRequestID() string {
	var b [28]byte
	copy(b[:], "req_")
	hex.Encode(b[4:20], binary.BigEndian.AppendUint64(nil, rand.Uint64()))
	hex.Encode(b[20:], binary.BigEndian.AppendUint32(nil, rand.Uint32()))
	return string(b[:])
}

func requestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// statusWriter remembers the status for the request log.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += n
	return n, err
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// statusClientClosed is the status logged for a request whose client went
// away before its answer (nginx's 499): nobody receives it, and it is not
// a server error.
const statusClientClosed = 499

// withLogging writes one structured line per request; never the key.
func (s *Server) withLogging(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		who := &caller{}
		r = r.WithContext(context.WithValue(r.Context(), callerKey{}, who))
		next.ServeHTTP(sw, r)
		took := time.Since(start)
		route := r.Pattern
		if route == "" {
			route = "unmatched"
		}
		if s.cfg.Metrics != nil {
			s.cfg.Metrics.Request(route, sw.status, took)
		}
		attrs := []slog.Attr{
			slog.String("request_id", requestID(r.Context())),
			slog.String("method", r.Method),
			slog.String("route", route),
			slog.Int("status", sw.status),
			slog.Int("bytes", sw.bytes),
			slog.Float64("duration_ms", float64(took.Microseconds())/1000),
		}
		if who.keyID != "" {
			attrs = append(attrs, slog.String("account_id", who.accountID), slog.String("key_id", who.keyID))
		}
		level := slog.LevelInfo
		switch {
		case who.gone != "":
			attrs = append(attrs, slog.String("outcome", "client went away"), slog.String("error", who.gone))
		case who.refused != "":
			// The outage log tells the story once; each refusal is no error.
			attrs = append(attrs, slog.String("outcome", "refused"), slog.String("cause", string(who.refused)))
		case sw.status >= 500:
			level = slog.LevelError
		case who.keyID != "":
			// The key was read, so the database served this request.
			s.cfg.Outages.Served(sw.status < 300 && r.Method != http.MethodGet && r.Method != http.MethodHead)
		}
		s.log.LogAttrs(r.Context(), level, "request", attrs...)
	})
}

// clientGone reports, and notes for the request log, that the request's
// client went away (its context ended) while it was served: whatever error
// that caused is not the server's.
func clientGone(r *http.Request, err error) bool {
	// A request past its database deadline is refused with a 503; only a
	// cancelled one lost its client.
	if !errors.Is(r.Context().Err(), context.Canceled) {
		return false
	}
	if who, ok := r.Context().Value(callerKey{}).(*caller); ok {
		who.gone = err.Error()
	}
	return true
}

// withRecover turns a panic into a logged 500 problem.
func (s *Server) withRecover(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.ErrorContext(r.Context(), "panic", "request_id", requestID(r.Context()), "panic", v)
				writeProblem(w, r, newProblem(http.StatusInternalServerError,
					"The server could not complete the request. Quote the request id when reporting it."))
			}
		}()
		next.ServeHTTP(w, r)
	})
}
