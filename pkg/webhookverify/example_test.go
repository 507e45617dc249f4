package webhookverify_test

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	"github.com/pds-dev/pds/pkg/webhookverify"
)

// receiverSecrets reads the signing secrets from the environment: the
// current one, which must be set, and during a rotation the previous one,
// which is optional (an unset optional variable adds nothing: an empty
// entry would make the whole list refused).
func receiverSecrets() ([]string, error) {
	secrets := []string{os.Getenv("PDS_WEBHOOK_SECRET")}
	if previous := os.Getenv("PDS_WEBHOOK_PREVIOUS_SECRET"); previous != "" {
		secrets = append(secrets, previous)
	}
	if err := webhookverify.CheckSecrets(secrets); err != nil {
		return nil, fmt.Errorf("PDS_WEBHOOK_SECRET: %w", err)
	}
	return secrets, nil
}

// A receiver: read the secrets from the environment when it starts and
// refuse to start without one; then read the raw body, verify it against the
// current secret (and, for a few minutes after a rotation, the previous one
// too), answer 400 to anything that does not verify (4xx is never retried)
// and 2xx quickly to what does. The delivery id is the idempotency key: a
// retry repeats it.
func Example_receiver() {
	// A deployment sets these outside the program; the example sets them so
	// that it runs.
	os.Setenv("PDS_WEBHOOK_SECRET", "whsec_current-secret")
	os.Setenv("PDS_WEBHOOK_PREVIOUS_SECRET", "whsec_previous-secret")
	defer os.Unsetenv("PDS_WEBHOOK_SECRET")
	defer os.Unsetenv("PDS_WEBHOOK_PREVIOUS_SECRET")

	secrets, err := receiverSecrets()
	if err != nil {
		log.Fatal(err) // fail fast: never serve with no key to verify with
	}
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

// CheckSecrets at start-up: an unset variable (""), or the prefix alone,
// holds no key material and is refused, as Verify would refuse it.
func ExampleCheckSecrets() {
	for _, secrets := range [][]string{
		{os.Getenv("PDS_EXAMPLE_UNSET_SECRET")},
		{"whsec_"},
		{"whsec_current-secret", ""},
		{"whsec_current-secret"},
	} {
		err := webhookverify.CheckSecrets(secrets)
		fmt.Println(errors.Is(err, webhookverify.ErrNoSecret), err)
	}
	// Output:
	// true webhookverify: no key material to verify with: secret 1 of 1 is empty or the "whsec_" prefix alone
	// true webhookverify: no key material to verify with: secret 1 of 1 is empty or the "whsec_" prefix alone
	// true webhookverify: no key material to verify with: secret 2 of 2 is empty or the "whsec_" prefix alone
	// false <nil>
}
