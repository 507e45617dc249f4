package httpapi

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/pds-dev/pds/internal/clock"
	"github.com/pds-dev/pds/internal/ratelimit"
	"github.com/pds-dev/pds/internal/testenv"
)

// BenchmarkAuthenticatedRequest measures the fixed cost every call pays:
// request id, log line, key lookup by hash, scope check, rate count, JSON.
func BenchmarkAuthenticatedRequest(b *testing.B) {
	for _, eng := range testenv.Engines {
		b.Run(eng.Name, func(b *testing.B) {
			if eng.Name == "postgres" {
				testenv.PostgresURL(b)
			}
			st := eng.NewStore(b)
			key := mintKeyB(b, st)
			var lim ratelimit.Limiter = ratelimit.NewMemory()
			if st.Engine() == "postgres" {
				lim = ratelimit.NewShared(st)
			}
			s := New(Config{RateLimit: 1 << 30}, st, clock.NewFake(start), lim, slog.New(slog.NewJSONHandler(io.Discard, nil)))
			s.handle("GET /bench", "", func(w http.ResponseWriter, r *http.Request) error {
				return writeJSON(w, http.StatusOK, statusView{Status: "ok"})
			})
			h := s.Handler()
			req := httptest.NewRequest("GET", "/bench", nil)
			req.Header.Set("Authorization", "Bearer "+key)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatalf("status %d", rec.Code)
				}
			}
		})
	}
}
