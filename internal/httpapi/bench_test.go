package httpapi

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pds-dev/pds/internal/clock"
	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/ratelimit"
	"github.com/pds-dev/pds/internal/serving"
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
	lim := ratelimit.For(st)
	return New(Config{Settings: serving.Settings{RateLimit: 1 << 30}}, st, clock.NewFake(start), lim, slog.New(slog.NewJSONHandler(io.Discard, nil))), key
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
			upsert := func(b *testing.B, n int, want int) bool {
				req := httptest.NewRequest("POST", "/persons", strings.NewReader(fmt.Sprintf(upsertBody, n, n)))
				req.Header.Set("Authorization", "Bearer "+key)
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != want {
					b.Errorf("status %d: %s", rec.Code, rec.Body)
					return false
				}
				return true
			}
			b.Run("created", func(b *testing.B) {
				n := 0
				b.ReportAllocs()
				for b.Loop() {
					n++
					if !upsert(b, n, http.StatusCreated) {
						return
					}
				}
			})
			// pdsbench's sustained row without the network: 32 requests
			// at a time, each a new person.
			var next atomic.Int64
			next.Store(1 << 40)
			b.Run("created-32", func(b *testing.B) {
				b.SetParallelism(max(1, 32/runtime.GOMAXPROCS(0)))
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if !upsert(b, int(next.Add(1)), http.StatusCreated) {
							return
						}
					}
				})
			})
			b.Run("matched", func(b *testing.B) {
				for b.Loop() {
					if !upsert(b, 1, http.StatusOK) {
						return
					}
				}
			})
		})
	}
}

// getPersonConns is the number of connections of the Get Person ratio in
// pdsbench: b.SetParallelism(getPersonConns/GOMAXPROCS) goroutines, each
// with a keep-alive connection of its own.
const getPersonConns = 64

// BenchmarkGetPerson measures GET /persons/{id} over loopback HTTP with 64
// connections: a person with two tags and a custom field value. Its ns/op
// divided into BenchmarkBareJSON's is pdsbench's "Get Person" ratio.
func BenchmarkGetPerson(b *testing.B) {
	for _, eng := range testenv.Engines {
		b.Run(eng.Name, func(b *testing.B) {
			s, key := benchServer(b, eng)
			h := s.Handler()
			do := func(method, path, body string, want int) string {
				req := httptest.NewRequest(method, path, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+key)
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != want {
					b.Fatalf("%s %s: status %d: %s", method, path, rec.Code, rec.Body)
				}
				var v struct {
					ID string `json:"id"`
				}
				_ = json.Unmarshal(rec.Body.Bytes(), &v)
				return v.ID
			}
			tagA := do("POST", "/tags", `{"name":"A","context":"person"}`, http.StatusCreated)
			tagB := do("POST", "/tags", `{"name":"B","context":"person"}`, http.StatusCreated)
			do("POST", "/custom-fields", `{"collection":"Person","key":"plan","data_type":"str","form_type":"text","label":"Plan"}`, http.StatusCreated)
			id := do("POST", "/persons", fmt.Sprintf(upsertBody, 1, 1), http.StatusCreated)
			do("POST", "/persons/"+id+"/tags", `{"tag_ids":["`+tagA+`","`+tagB+`"]}`, http.StatusOK)
			do("PATCH", "/persons/"+id, `{"custom_fields":{"plan":"gold"}}`, http.StatusOK)
			hs := httptest.NewServer(h)
			defer hs.Close()
			parallelGets(b, hs.URL+"/persons/"+id, key)
		})
	}
}

// BenchmarkBareJSON is a bare net/http handler writing a person's JSON,
// loaded as BenchmarkGetPerson loads the service.
func BenchmarkBareJSON(b *testing.B) {
	body := []byte(`{"id":"per_0123456789abcdef","email":"person.1@example.com","external_id":"crm-1","f_id":null,"first_name":"Ada","last_name":"Lovelace","phone":"+44 20 7946 0000","tag_ids":["tag_a","tag_b"],"tags":["A","B"],"custom_fields":{"plan":"gold"},"date_created":"2026-11-21T10:00:10.000Z","date_last_seen":"2026-11-21T10:00:10.000Z"}` + "\n")
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	defer hs.Close()
	parallelGets(b, hs.URL, "")
}

// parallelGets sends GET url from getPersonConns goroutines, each on a
// keep-alive connection, until b.N requests are answered.
func parallelGets(b *testing.B, url, key string) {
	client := &http.Client{Transport: &http.Transport{
		MaxIdleConns: getPersonConns, MaxIdleConnsPerHost: getPersonConns, MaxConnsPerHost: getPersonConns,
		DisableCompression: true,
	}}
	defer client.CloseIdleConnections()
	b.SetParallelism(max(1, getPersonConns/runtime.GOMAXPROCS(0)))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest("GET", url, nil)
			if key != "" {
				req.Header.Set("Authorization", "Bearer "+key)
			}
			res, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				b.Errorf("status %d", res.StatusCode)
				return
			}
		}
	})
}

// BenchmarkUpsertPersonsBatch measures POST /persons/batch through the
// whole handler: 100 new persons a request, the body pdsbench sends.
func BenchmarkUpsertPersonsBatch(b *testing.B) {
	for _, eng := range testenv.Engines {
		b.Run(eng.Name, func(b *testing.B) {
			s, key := benchServer(b, eng)
			h := s.Handler()
			n := 0
			b.ReportAllocs()
			for b.Loop() {
				var body strings.Builder
				body.WriteString(`{"persons":[`)
				for k := range 100 {
					if k > 0 {
						body.WriteByte(',')
					}
					n++
					fmt.Fprintf(&body, `{"external_id":"batch-%d","email":"batch-%d@bench.example","first_name":"First %d","last_name":"Last","phone":"+1555%07d"}`, n, n, n, n)
				}
				body.WriteString(`]}`)
				req := httptest.NewRequest("POST", "/persons/batch", strings.NewReader(body.String()))
				req.Header.Set("Authorization", "Bearer "+key)
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "persons/s")
		})
	}
}
