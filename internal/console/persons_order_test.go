package console_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/testenv"
)

// TestPersonsNewestFirst: the persons screen shows the persons seen last
// on its first page, newest first, and its search finds one by email or
// external id.
func TestPersonsNewestFirst(t *testing.T) {
	t.Parallel()
	testenv.ForEach(t, func(t *testing.T, eng testenv.Engine) {
		e := newEnv(t, eng)
		acc := e.account()
		ctx := context.Background()
		for i := range 30 {
			if _, _, err := e.st.UpsertPerson(ctx, acc, domain.PersonUpsert{Email: domain.Opt[string]{Set: true, Value: fmt.Sprintf("p%02d@order.test", i)},
				ExternalID: domain.Opt[string]{Set: true, Value: fmt.Sprintf("crm-%02d", i)}}, e.write()); err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(time.Minute)
		}
		full, _ := e.key(acc, domain.ScopePersonsRead)
		b := e.browser()
		b.signIn(full)
		first := b.get("/console/persons")
		if first.status != http.StatusOK || !strings.Contains(first.body, "30 seen within") {
			t.Fatalf("persons: %d %s", first.status, first.body)
		}
		at := func(body, email string) int { return strings.Index(body, ">"+email+"<") }
		if a, b, c := at(first.body, "p29@order.test"), at(first.body, "p28@order.test"), at(first.body, "p05@order.test"); a < 0 || b < a || c < b {
			t.Fatalf("page 1 is not newest first (p29 at %d, p28 at %d, p05 at %d)", a, b, c)
		}
		if at(first.body, "p04@order.test") >= 0 {
			t.Fatal("page 1 holds a person of page 2")
		}
		second := b.get("/console/persons?seen=720h&page=2")
		if at(second.body, "p04@order.test") < 0 || at(second.body, "p00@order.test") < at(second.body, "p04@order.test") {
			t.Fatalf("page 2 holds the stalest, newest first: %s", second.body)
		}
		for _, path := range []string{"/console/persons?email=P07%40Order.test", "/console/persons?external_id=crm-07"} {
			found := b.get(path)
			if found.status != http.StatusOK || !strings.Contains(found.body, "1 found") || at(found.body, "p07@order.test") < 0 {
				t.Fatalf("%s: %d %s", path, found.status, found.body)
			}
		}
		if res := b.get("/console/persons?email=not-an-address"); res.status != http.StatusBadRequest {
			t.Fatalf("a malformed email: %d", res.status)
		}
	})
}
