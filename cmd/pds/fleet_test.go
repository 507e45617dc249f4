package main

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/testenv"
)

// TestFleetThroughPgBouncer: four instances of the real binary on one
// database through one PgBouncer in transaction mode with its defaults (a
// server pool of five): under concurrent writers, every answer is a
// success, nothing acknowledged is lost and every change reaches the HTTPS
// receiver once; a key revoked through the command line is refused by
// every instance on its very next request; and 64 clients at once on one
// instance, more than the pooler's server connections many times over, all
// get their answers: no request holds two connections at once.
func TestFleetThroughPgBouncer(t *testing.T) {
	if testing.Short() {
		t.Skip("four instances under load; skipped with -short")
	}
	t.Parallel()
	database := testenv.PgBouncer.NewDatabase(t)
	bin := buildPDS(t)
	began := time.Now()
	rig := newFaultRig(t, bin, database, 4)
	rig.startWriters()
	time.Sleep(3 * time.Second)

	// A revocation, while the writers write.
	account := admin(t, bin, database, "accounts", "create", "--name", "fleet")["id"].(string)
	made := admin(t, bin, database, "keys", "create", "--account", account, "--scopes", "persons:read")
	key, keyID := made["key"].(string), made["id"].(string)
	for i, c := range rig.clients {
		if status := get(t, c, key, "/me"); status != http.StatusOK {
			t.Fatalf("instance %d: GET /me with a new key: %d", i, status)
		}
	}
	admin(t, bin, database, "keys", "revoke", keyID)
	for i, c := range rig.clients {
		if status := get(t, c, key, "/me"); status != http.StatusUnauthorized {
			t.Fatalf("instance %d: GET /me right after the revocation: %d, want 401", i, status)
		}
	}

	manyClients(t, rig.clients[0], 64, 30)
	time.Sleep(2 * time.Second)
	rig.finish(began)
	for i, answers := range rig.answers {
		for _, a := range answers {
			if a.err != nil || a.status/100 != 2 {
				t.Errorf("instance %d: %s %s: %d %v %s", i, a.method, a.path, a.status, a.err, a.body)
				break
			}
		}
	}
}

// get sends GET path with key to c's instance and returns the status.
func get(t *testing.T, c *crashClient, key, path string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.srv.cur.Load().base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// manyClients has n clients at once send each rounds requests (a new person,
// a breadcrumb for it, a read of it) to c's instance, and fails on any
// answer that is not a success.
func manyClients(t *testing.T, c *crashClient, n, rounds int) {
	t.Helper()
	client := &crashClient{srv: c.srv, key: c.key, http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n},
		Timeout: 30 * time.Second}}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed []string
	)
	start := time.Now()
	for i := range n {
		wg.Go(func() {
			for r := range rounds {
				ext := fmt.Sprintf("many-%d-%d", i, r)
				status, raw, err := client.do("POST", "/persons", map[string]any{"external_id": ext}, nil)
				if err == nil && status == http.StatusCreated {
					status, raw, err = client.do("POST", "/breadcrumbs", map[string]any{"flavor": "page_view", "external_id": ext}, nil)
				}
				if err == nil && status == http.StatusCreated {
					status, raw, err = client.do("GET", "/persons?external_id="+ext, nil, nil)
				}
				if err != nil || status/100 != 2 {
					mu.Lock()
					failed = append(failed, fmt.Sprintf("client %d round %d: %d %v %.200s", i, r, status, err, raw))
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d clients × %d rounds of 3 requests through a server pool of %d: %s", n, rounds, testenv.BouncerPoolSize,
		time.Since(start).Round(time.Millisecond))
	if len(failed) > 0 {
		t.Fatalf("%d of %d clients failed; first: %s", len(failed), n, strings.Join(failed[:1], ""))
	}
}
