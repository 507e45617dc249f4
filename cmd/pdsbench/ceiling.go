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

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pds-dev/pds/internal/store/postgres"
)

// The ceilings the ratios divide by, each in a process of its own, so
// that nothing of pds (its garbage collector, caches, background work)
// lowers them, and they take nothing from the server they are compared
// with: this program again, with the hidden subcommand
//
//	pdsbench ceiling respond --addr A --body FILE [--status 200]
//	pdsbench ceiling postgres-read --addr A --database URL
//	pdsbench ceiling signed-posts --url U --ca-file F [--count N --workers 8 --http2]
//
// respond answers every request with the body of FILE (Get Person's JSON
// for row 6, a breadcrumb's for row 8); postgres-read answers GET
// /persons/{id} with the person's row read by primary key through pgxpool,
// as JSON; signed-posts is the delivery rows' bare loop (delivery.go),
// which prints what it took and exits.
var ceilings = map[string]func(ctx context.Context, fs *flag.FlagSet, args []string) error{
	"respond":       respondCeiling,
	"postgres-read": postgresReadCeiling,
	"signed-posts":  signedPostsCeiling,
}

func runCeiling(ctx context.Context, args []string) error {
	if len(args) == 0 || ceilings[args[0]] == nil {
		return errors.New("ceiling: respond, postgres-read or signed-posts")
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

// personRow is a row of persons as the bare PostgreSQL read encodes it.
type personRow struct {
	ID           string          `json:"id"`
	Email        *string         `json:"email"`
	ExternalID   *string         `json:"external_id"`
	FID          *string         `json:"f_id"`
	FirstName    *string         `json:"first_name"`
	LastName     *string         `json:"last_name"`
	Phone        *string         `json:"phone"`
	Language     *string         `json:"language"`
	Pseudonym    *string         `json:"pseudonym"`
	Occupation   *string         `json:"occupation"`
	Age          *string         `json:"age"`
	Ethnicity    *string         `json:"ethnicity"`
	Income       *string         `json:"income"`
	Edu          *string         `json:"edu"`
	Companies    json.RawMessage `json:"companies"`
	Address      json.RawMessage `json:"address"`
	EmailOptOut  bool            `json:"email_opt_out"`
	IsArchived   bool            `json:"is_archived"`
	UpsertResult string          `json:"upsert_result"`
	CreatedAt    int64           `json:"created_at"`
	LastSeenAt   int64           `json:"last_seen_at"`
}

// postgresReadCeiling serves GET /persons/{id}: the persons row of that
// primary key, through a pgxpool as large as pds's own pool and with
// pgx's default of statements prepared by name, encoded as JSON. It is
// what Get Person on PostgreSQL would cost with nothing of pds around the
// read: no key, no tags, no custom fields.
func postgresReadCeiling(ctx context.Context, fs *flag.FlagSet, args []string) error {
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	database := fs.String("database", "", "the PostgreSQL URL pds serve was given")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := pgxpool.ParseConfig(*database)
	if err != nil {
		return err
	}
	cfg.MaxConns = int32(postgres.PoolSize())
	cfg.MinConns = cfg.MaxConns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := pool.Ping(ctx); err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /persons/{id}", func(w http.ResponseWriter, r *http.Request) {
		var p personRow
		var companies, address string
		err := pool.QueryRow(r.Context(), `SELECT id, email, external_id, f_id, first_name, last_name, phone,
			language, pseudonym, occupation, age, ethnicity, income, edu, companies, address,
			email_opt_out, is_archived, upsert_result, created_at, last_seen_at FROM persons WHERE id = $1`, r.PathValue("id")).Scan(
			&p.ID, &p.Email, &p.ExternalID, &p.FID, &p.FirstName, &p.LastName, &p.Phone,
			&p.Language, &p.Pseudonym, &p.Occupation, &p.Age, &p.Ethnicity, &p.Income, &p.Edu, &companies, &address,
			&p.EmailOptOut, &p.IsArchived, &p.UpsertResult, &p.CreatedAt, &p.LastSeenAt)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		p.Companies, p.Address = json.RawMessage(companies), json.RawMessage(address)
		body, err := json.Marshal(p)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
	return serveCeiling(ctx, *addr, mux)
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
