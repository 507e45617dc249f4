package storetest

import (
	"context"
	"database/sql"
	"encoding/json"
	"maps"
	"testing"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// SignaturesRedactedAtRest holds an engine to what the delivery log keeps
// of each attempt's signatures, in its own tables (db is a connection of
// the test's own to st's database): their time and scheme, never a value
// that a reader of the database, a backup or the log could replay the
// delivery with within its timestamp tolerance. An attempt recorded now is
// stored so; rerun applies again the migration that redacts those an
// earlier version recorded whole, which must leave every other header and
// every attempt without a signature as it found them.
func SignaturesRedactedAtRest(t *testing.T, st store.Store, db *sql.DB, rerun func() error) {
	t.Helper()
	ctx := context.Background()
	acc := NewAccount(t, st)
	w := newWebhook(t, st, acc)
	d := queueDelivery(t, st, w, Epoch)
	if err := st.FinishAttempt(ctx, claimOneDelivery(t, st, Epoch), store.AttemptResult{
		Attempt: domain.DeliveryAttempt{AttemptedAt: Epoch, StatusCode: statusCode(204), RequestHeaders: map[string]string{
			"Service-Signature": "t=1795255200,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd",
			"Webhook-Signature": "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=",
		}},
		Status: domain.DeliverySucceeded,
	}); err != nil {
		t.Fatal(err)
	}
	stored := func(attempt int) map[string]string {
		t.Helper()
		var raw string
		if err := db.QueryRowContext(ctx, `SELECT request_headers FROM delivery_attempts WHERE delivery_id = $1 AND attempt = $2`,
			d.ID, attempt).Scan(&raw); err != nil {
			t.Fatalf("attempt %d: %v", attempt, err)
		}
		var h map[string]string
		if err := json.Unmarshal([]byte(raw), &h); err != nil {
			t.Fatalf("attempt %d: %q: %v", attempt, raw, err)
		}
		return h
	}
	if got, want := stored(1), map[string]string{"Service-Signature": "t=1795255200,v1=…redacted",
		"Webhook-Signature": "v1,…redacted"}; !maps.Equal(got, want) {
		t.Errorf("an attempt recorded now is stored as %v, want %v", got, want)
	}

	// Attempts as an earlier version recorded them: the signatures whole.
	earlier := []struct {
		headers, want map[string]string
	}{
		{map[string]string{"Content-Type": "application/json", "Service-Timestamp": "1795255200",
			"Service-Signature": "t=1795255200,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd",
			"Webhook-Signature": "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4= v1,3TmRUD1jM+3A9Nqi3yz7JZ1iqG6DqtGUmqJlxVfAn2c=",
			"Webhook-Id":        "4b07f4c84d7f8ce5ac9d0dfb03e3df1c"},
			map[string]string{"Content-Type": "application/json", "Service-Timestamp": "1795255200",
				"Service-Signature": "t=1795255200,v1=…redacted", "Webhook-Signature": "v1,…redacted v1,…redacted",
				"Webhook-Id": "4b07f4c84d7f8ce5ac9d0dfb03e3df1c"}},
		{map[string]string{"Service-Signature": "t=1795255260,v1=00ff"},
			map[string]string{"Service-Signature": "t=1795255260,v1=…redacted"}},
		// Nothing pds ever wrote, but nothing that could be a signature
		// is kept either.
		{map[string]string{"Service-Signature": "5257a869e7ecebeda32affa62cdca3fa"},
			map[string]string{"Service-Signature": "…redacted"}},
		{map[string]string{}, map[string]string{}},
		{map[string]string{"User-Agent": "pds-webhooks/0.0.0"}, map[string]string{"User-Agent": "pds-webhooks/0.0.0"}},
	}
	for i, e := range earlier {
		raw, err := json.Marshal(e.headers)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO delivery_attempts (delivery_id, attempt, attempted_at, status_code, error,
			duration_ms, request_headers) VALUES ($1, $2, $3, 204, NULL, 10, $4)`, d.ID, i+2, Epoch.UnixMilli(), string(raw)); err != nil {
			t.Fatal(err)
		}
	}
	if err := rerun(); err != nil {
		t.Fatalf("the migration: %v", err)
	}
	for i, e := range earlier {
		if got := stored(i + 2); !maps.Equal(got, e.want) {
			t.Errorf("recorded earlier as %v, after the migration %v; want %v", e.headers, got, e.want)
		}
	}
	// The log reads them so too.
	_, attempts, err := st.GetDelivery(ctx, acc, w.ID, d.ID)
	if err != nil || len(attempts) != 1+len(earlier) {
		t.Fatalf("the log: %d attempts, %v", len(attempts), err)
	}
	if got := attempts[1].RequestHeaders; !maps.Equal(got, earlier[0].want) {
		t.Errorf("the log shows %v, want %v", got, earlier[0].want)
	}
}
