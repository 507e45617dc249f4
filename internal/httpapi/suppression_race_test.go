package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pds-dev/pds/internal/httpapi/apitest"
	"github.com/pds-dev/pds/internal/testenv"
)

// suppressionRaceRounds is how many rounds TestNoSuppressedIdentifierChangesHands
// runs on each configuration: a few by default, so that the suite stays
// quick; PDS_SUPPRESSION_RACE_ROUNDS=50 for the long run.
func suppressionRaceRounds(t *testing.T) int {
	if v := os.Getenv("PDS_SUPPRESSION_RACE_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("PDS_SUPPRESSION_RACE_ROUNDS=%q is not a number of rounds", v)
		}
		return n
	}
	return 6
}

// TestNoSuppressedIdentifierChangesHands: person P holds email X; eight
// writers keep giving X to other persons Qi (PATCH /persons/Qi, and a
// matched upsert by Qi's external_id), each answered 409 while P holds X;
// meanwhile P is erased with suppression. Once the erasure has answered,
// no person holds X, and X stays refused: a write either met P holding X
// or met the suppression, never the moment in between. Each round is a
// new account, whose keys say at first that it suppresses nothing.
func TestNoSuppressedIdentifierChangesHands(t *testing.T) {
	t.Parallel()
	rounds := suppressionRaceRounds(t)
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
		defer client.CloseIdleConnections()
		send := func(key, method, path string, body any) (int, []byte, error) {
			var rd *bytes.Reader
			if body != nil {
				raw, _ := json.Marshal(body)
				rd = bytes.NewReader(raw)
			}
			var req *http.Request
			if rd != nil {
				req, _ = http.NewRequest(method, env.HTTP.URL+path, rd)
				req.Header.Set("Content-Type", "application/json")
			} else {
				req, _ = http.NewRequest(method, env.HTTP.URL+path, nil)
			}
			req.Header.Set("Authorization", "Bearer "+key)
			res, err := client.Do(req)
			if err != nil {
				return 0, nil, err
			}
			defer res.Body.Close()
			var out bytes.Buffer
			_, err = out.ReadFrom(res.Body)
			return res.StatusCode, out.Bytes(), err
		}
		handedOver := 0
		for round := range rounds {
			acc := env.NewAccount()
			key := env.Key(acc)
			email := fmt.Sprintf("held-%d@race.test", round)
			p := upsertPerson(env, key, map[string]any{"external_id": "p-ext", "email": email}, 201)
			qs := make([]personView, 8)
			for i := range qs {
				qs[i] = upsertPerson(env, key, map[string]any{"external_id": fmt.Sprintf("q%d-ext", i)}, 201)
			}
			var erased atomic.Bool
			var wg sync.WaitGroup
			for i, q := range qs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for n, after := 0, 0; after < 4; n++ {
						if erased.Load() {
							after++
						}
						var status int
						var body []byte
						var err error
						if n%2 == 0 {
							status, body, err = send(key, http.MethodPatch, "/persons/"+q.ID, map[string]any{"email": email})
						} else {
							status, body, err = send(key, http.MethodPost, "/persons", map[string]any{"external_id": fmt.Sprintf("q%d-ext", i), "email": email})
						}
						if err != nil || status != http.StatusConflict && status != http.StatusOK {
							t.Errorf("round %d: a write beside the erasure: %d %s %v", round, status, body, err)
							return
						}
					}
				}()
			}
			status, body, err := send(key, http.MethodDelete, "/persons/"+p.ID+"?suppress=true", nil)
			if err != nil || status != http.StatusNoContent {
				t.Fatalf("round %d: erase: %d %s %v", round, status, body, err)
			}
			erased.Store(true)
			wg.Wait()
			var found struct {
				Total int          `json:"total"`
				Items []personView `json:"items"`
			}
			env.Get(key, "/persons?email="+url.QueryEscape(email)).Want(200).JSON(&found)
			if found.Total != 0 {
				handedOver++
				t.Errorf("round %d: after the erasure with suppression, %s holds the suppressed email", round, found.Items[0].ID)
			}
			if pr := env.Post(key, "/persons", map[string]any{"email": email}).Want(409).Problem(); pr.Type != "urn:pds:problem:suppressed" {
				t.Fatalf("round %d: a new person with the suppressed email: %+v", round, pr)
			}
		}
		if handedOver > 0 {
			t.Errorf("%s: in %d of %d rounds a person held the suppressed identifier", eng.Name, handedOver, rounds)
		}
	})
}
