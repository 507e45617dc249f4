package client_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/httpapi/apitest"
	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/pkg/client"
)

// TestOutageIsRecognised: a server whose database cannot answer within the
// deadline refuses with a 503 that the client decodes as a problem with its
// cause, and that Outage recognises with its wait; a 500 or a 4xx is no
// outage.
func TestOutageIsRecognised(t *testing.T) {
	t.Parallel()
	cfg := apitest.DefaultConfig()
	// A deadline that has passed before any statement runs: every request
	// that needs the database is refused as a database that did not answer.
	cfg.DatabaseTimeout = time.Nanosecond
	env := apitest.New(t, testenv.SQLite, apitest.WithConfig(cfg))
	key := env.Key(env.NewAccount())
	c, err := client.NewClientWithResponses(env.HTTP.URL, client.WithKey(key),
		client.WithHTTPClient(newContractChecked(t, env.HTTP.Client())))
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.UpsertPersonWithResponse(context.Background(), client.PersonUpsert{ExternalID: client.Set("crm-1")})
	if err != nil {
		t.Fatal(err)
	}
	p := res.ApplicationProblemJSON503
	if res.StatusCode() != http.StatusServiceUnavailable || p == nil || p.Cause == nil || *p.Cause != client.ProblemCauseDatabaseTimeout {
		t.Fatalf("status %d, problem %+v; want a 503 with cause database_timeout", res.StatusCode(), p)
	}
	if wait, ok := client.Outage(res.HTTPResponse); !ok || wait != 5*time.Second {
		t.Fatalf("Outage: %s, %v; want 5s, true", wait, ok)
	}
	for _, status := range []int{http.StatusInternalServerError, http.StatusTooManyRequests, http.StatusOK} {
		r := &http.Response{StatusCode: status, Header: http.Header{"Retry-After": {"5"}}}
		if _, ok := client.Outage(r); ok {
			t.Errorf("Outage took a %d for an outage", status)
		}
	}
	if _, ok := client.Outage(&http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{}}); ok {
		t.Error("Outage took a 503 without Retry-After for an outage")
	}
}
