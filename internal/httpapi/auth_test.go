package httpapi_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/httpapi/apitest"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/testenv"
)

func TestUnauthorized(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		acc := env.NewAccount()
		good := env.Key(acc)

		revoked, rk := env.KeyWith(service.KeyRequest{AccountID: acc})
		if _, err := env.Store.RevokeKey(context.Background(), rk.ID, env.Clock.Now()); err != nil {
			t.Fatal(err)
		}
		expiring, _ := env.KeyWith(service.KeyRequest{AccountID: acc, ExpiresIn: time.Hour})

		cases := []struct{ name, header, detail string }{
			{"missing", "", "no Authorization header"},
			{"basic scheme", "Basic " + good, "malformed"},
			{"bearer without key", "Bearer ", "malformed"},
			{"two tokens", "Bearer " + good + " extra", "malformed"},
			{"unknown", "Bearer pds_AAAAAAAA_" + strings.Repeat("x", 40), "not valid"},
			{"truncated", "Bearer " + good[:len(good)-1], "not valid"},
			{"revoked", "Bearer " + revoked, "revoked"},
		}
		check := func(t *testing.T, header, detail string) {
			t.Helper()
			h := http.Header{}
			if header != "" {
				h.Set("Authorization", header)
			}
			res := env.Do(apitest.Request{Method: "GET", Path: "/me", Header: h}).Want(401)
			if got := res.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
				t.Errorf("WWW-Authenticate = %q, want Bearer", got)
			}
			p := res.Problem()
			if p.Type != "about:blank" || p.Title != "Unauthorized" || p.Status != 401 || !strings.Contains(p.Detail, detail) {
				t.Errorf("problem %+v, want detail containing %q", p, detail)
			}
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) { check(t, c.header, c.detail) })
		}
		t.Run("expired", func(t *testing.T) {
			env.Get(expiring, "/me").Want(200)
			env.Clock.Advance(time.Hour)
			check(t, "Bearer "+expiring, "expired")
		})
		t.Run("lowercase scheme is accepted", func(t *testing.T) {
			h := http.Header{"Authorization": {"bearer " + good}}
			env.Do(apitest.Request{Method: "GET", Path: "/me", Header: h}).Want(200)
		})
	})
}

// TestRevocationSeenByAnotherInstance: two servers on one database; a key
// revoked through one is refused by the other on the very next request.
func TestRevocationSeenByAnotherInstance(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		db := eng.NewDatabase(t)
		a := apitest.NewOn(t, eng.Open(t, db))
		b := apitest.NewOn(t, eng.Open(t, db), apitest.WithClock(a.Clock))
		acc := a.NewAccount()
		key, k := a.KeyWith(service.KeyRequest{AccountID: acc})
		a.Get(key, "/me").Want(200)
		b.Get(key, "/me").Want(200)
		if _, err := a.Store.RevokeKey(context.Background(), k.ID, a.Clock.Now()); err != nil {
			t.Fatal(err)
		}
		b.Get(key, "/me").Want(401)
		a.Get(key, "/me").Want(401)
	})
}

func TestWhoami(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		acc := env.NewAccount()
		name := "crm-sync"
		limit := 7
		key, k := env.KeyWith(service.KeyRequest{
			AccountID: acc, Scopes: []domain.Scope{domain.ScopeTagsRead}, Name: &name,
			ExpiresIn: 48 * time.Hour, RateLimit: &limit,
		})
		if !regexp.MustCompile(`^pds_[A-Za-z0-9]{8}_[A-Za-z0-9]+$`).MatchString(key) {
			t.Fatalf("key %q does not look like pds_<prefix>_<secret>", key)
		}
		for range 3 {
			env.Get(key, "/me").Want(200)
		}
		var me struct {
			AccountID   string   `json:"account_id"`
			KeyID       string   `json:"key_id"`
			Scopes      []string `json:"scopes"`
			Prefix      string   `json:"prefix"`
			LastFour    string   `json:"last_four"`
			ServiceName *string  `json:"service_name"`
			ExpiresAt   string   `json:"expires_at"`
			LastUsedAt  string   `json:"last_used_at"`
			Revoked     bool     `json:"revoked"`
			RateLimit   struct {
				Limit         int    `json:"limit"`
				Remaining     int    `json:"remaining"`
				WindowSeconds int    `json:"window_seconds"`
				ResetAt       string `json:"reset_at"`
			} `json:"rate_limit"`
		}
		res := env.Get(key, "/me").Want(200)
		res.JSON(&me)
		if me.AccountID != acc || me.KeyID != k.ID || len(me.Scopes) != 1 || me.Scopes[0] != "tags:read" ||
			me.Prefix != key[:12] || me.LastFour != key[len(key)-4:] || me.ServiceName == nil || *me.ServiceName != name ||
			me.ExpiresAt != "2026-11-23T10:00:00.000Z" || me.LastUsedAt != "2026-11-21T10:00:00.000Z" || me.Revoked {
			t.Fatalf("whoami = %+v", me)
		}
		// GET /me is not counted: four calls left the budget whole.
		if me.RateLimit.Limit != 7 || me.RateLimit.Remaining != 7 || me.RateLimit.WindowSeconds != 60 ||
			me.RateLimit.ResetAt != "2026-11-21T10:01:00.000Z" {
			t.Fatalf("rate_limit = %+v", me.RateLimit)
		}
		if res.Header.Get("RateLimit") != "" {
			t.Error("GET /me carries RateLimit headers although it is not counted")
		}
	})
}

func TestRequestID(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, testenv.SQLite)
	res := env.Do(apitest.Request{Method: "GET", Path: "/healthz", Header: http.Header{"X-Request-Id": {"abc-123"}}})
	if got := res.Header.Get("X-Request-Id"); got != "abc-123" {
		t.Fatalf("X-Request-Id = %q, want the echoed abc-123", got)
	}
	res = env.Do(apitest.Request{Method: "GET", Path: "/healthz", Header: http.Header{"X-Request-Id": {"bad id with spaces"}}})
	if got := res.Header.Get("X-Request-Id"); !strings.HasPrefix(got, "req_") {
		t.Fatalf("X-Request-Id = %q, want a generated one for an unsafe value", got)
	}
}

// TestKeyChangesOutsideTheAPI: a key the server has cached, changed in the
// database by anyone (here an operator's SQL, through no code of ours), is
// served as changed on the very next request: its rate limit, its scopes,
// its revocation, its deletion.
func TestKeyChangesOutsideTheAPI(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		db := eng.NewDatabase(t)
		env := apitest.NewOn(t, eng.Open(t, db))
		raw := eng.Raw(t, db)
		exec := func(query string, args ...any) {
			t.Helper()
			if _, err := raw.Exec(query, args...); err != nil {
				t.Fatal(err)
			}
		}
		acc := env.NewAccount()
		key, k := env.KeyWith(service.KeyRequest{AccountID: acc})
		other, o := env.KeyWith(service.KeyRequest{AccountID: acc})
		for range 3 {
			env.Get(key, "/tags").Want(200)
			env.Get(other, "/tags").Want(200)
		}
		exec(`UPDATE api_keys SET rate_limit = 50 WHERE id = $1`, k.ID)
		if got := env.Get(key, "/tags").Want(200).Header.Get("RateLimit-Policy"); got != `"per-key";q=50;w=60` {
			t.Fatalf("after the rate limit changed: RateLimit-Policy %q", got)
		}
		exec(`UPDATE api_keys SET scopes = 'persons:read' WHERE id = $1`, k.ID)
		env.Get(key, "/tags").Want(403)
		env.Get(key, "/persons?email=a@example.com").Want(200)
		exec(`UPDATE api_keys SET revoked_at = 1 WHERE id = $1`, k.ID)
		env.Get(key, "/persons?email=a@example.com").Want(401)
		exec(`DELETE FROM api_keys WHERE id = $1`, o.ID)
		env.Get(other, "/tags").Want(401)
	})
}
