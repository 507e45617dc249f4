package httpapi

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pds-dev/pds/internal/clock"
	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/ratelimit"
	"github.com/pds-dev/pds/internal/testenv"
)

// benchServer is a server on a fresh database of eng with an unbounded
// rate limit, and a key with every scope.
func benchServer(b *testing.B, eng testenv.Engine) (*Server, string) {
	if eng.Name == "postgres" {
		testenv.PostgresURL(b)
	}
	st := eng.NewStore(b)
	key := mintKeyB(b, st)
	var lim ratelimit.Limiter = ratelimit.NewMemory()
	if st.Engine() == "postgres" {
		lim = ratelimit.NewShared(st)
	}
	return New(Config{RateLimit: 1 << 30}, st, clock.NewFake(start), lim, slog.New(slog.NewJSONHandler(io.Discard, nil))), key
}

// BenchmarkAuthenticatedRequest measures the fixed cost every call pays:
// request id, log line, key lookup by hash, scope check, rate count, JSON.
func BenchmarkAuthenticatedRequest(b *testing.B) {
	for _, eng := range testenv.Engines {
		b.Run(eng.Name, func(b *testing.B) {
			s, key := benchServer(b, eng)
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

// upsertBody is a typical Upsert Person body from a CRM sync.
const upsertBody = `{"external_id":"crm-%d","email":"Person.%d@Example.com","first_name":"Ada","last_name":"Lovelace","phone":"+44 20 7946 0000"}`

// BenchmarkDecodeUpsertBody measures the strict body decoder alone, which
// every write pays.
func BenchmarkDecodeUpsertBody(b *testing.B) {
	body := fmt.Sprintf(upsertBody, 1, 1)
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("POST", "/persons", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		var in domain.PersonUpsert
		if err := decodeJSON(req, &in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUpsertPerson measures one Upsert Person through the whole
// handler: a new person each time (created) and the same person again
// (matched).
func BenchmarkUpsertPerson(b *testing.B) {
	for _, eng := range testenv.Engines {
		b.Run(eng.Name, func(b *testing.B) {
			s, key := benchServer(b, eng)
			h := s.Handler()
			upsert := func(n int, want int) {
				req := httptest.NewRequest("POST", "/persons", strings.NewReader(fmt.Sprintf(upsertBody, n, n)))
				req.Header.Set("Authorization", "Bearer "+key)
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != want {
					b.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
			}
			b.Run("created", func(b *testing.B) {
				n := 0
				for b.Loop() {
					n++
					upsert(n, http.StatusCreated)
				}
			})
			b.Run("matched", func(b *testing.B) {
				for b.Loop() {
					upsert(1, http.StatusOK)
				}
			})
		})
	}
}
