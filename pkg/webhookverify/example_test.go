package webhookverify_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/pds-dev/pds/pkg/webhookverify"
)

// A receiver: read the raw body, verify it against the current secret (and,
// for a few minutes after a rotation, the previous one too), answer 400 to
// anything that does not verify (4xx is never retried) and 2xx quickly to
// what does. The delivery id is the idempotency key: a retry repeats it.
func Example_receiver() {
	secrets := []string{"whsec_current-secret", "whsec_previous-secret"}
	seen := map[string]bool{}

	receiver := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, "unreadable body", http.StatusBadRequest)
			return
		}
		if err := webhookverify.Verify(r.Header, body, secrets, time.Now(), webhookverify.Options{}); err != nil {
			http.Error(w, "signature does not verify", http.StatusBadRequest)
			return
		}
		id := r.Header.Get(webhookverify.HeaderDeliveryID)
		if !seen[id] {
			seen[id] = true
			fmt.Printf("handling %s %s\n", r.Header.Get(webhookverify.HeaderEvent), id)
		}
		w.WriteHeader(http.StatusNoContent)
	})

	// What pds sends, signed here with the previous secret.
	body := `{"id":"5f0c2a3e9b8d4c1fa7e6d5c4b3a29180","event":"person.updated","created":"2026-11-21T10:15:30.123Z","data":{}}`
	now := time.Now()
	send := func(signature string) int {
		req := httptest.NewRequest(http.MethodPost, "/hooks/pds", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(webhookverify.HeaderDeliveryID, "5f0c2a3e9b8d4c1fa7e6d5c4b3a29180")
		req.Header.Set(webhookverify.HeaderEvent, "person.updated")
		req.Header.Set(webhookverify.HeaderSignature, signature)
		rec := httptest.NewRecorder()
		receiver.ServeHTTP(rec, req)
		return rec.Code
	}
	fmt.Println(send(webhookverify.Sign("whsec_previous-secret", now, []byte(body))))
	fmt.Println(send(webhookverify.Sign("whsec_previous-secret", now, []byte(body)))) // a retry
	fmt.Println(send(webhookverify.Sign("whsec_someone-else", now, []byte(body))))
	fmt.Println(send("t=1,v1=not-hex"))
	// Output:
	// handling person.updated 5f0c2a3e9b8d4c1fa7e6d5c4b3a29180
	// 204
	// 204
	// 400
	// 400
}
