package webhookverify_test

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
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

// CheckSecrets at start-up: an unset variable (""), the prefix alone, or a
// secret of zero bytes only holds no key material and is refused, as Verify
// would refuse it. CheckStandardSecrets also refuses what is not a Standard
// Webhooks secret ("whsec_" and base64), which the pds scheme would take.
func ExampleCheckSecrets() {
	for _, secrets := range [][]string{
		{os.Getenv("PDS_EXAMPLE_UNSET_SECRET")},
		{"whsec_"},
		{"whsec_AAAAAAAA"}, // base64 of six zero bytes
		{"whsec_current-secret", ""},
		{"whsec_current-secret"},
	} {
		err := webhookverify.CheckSecrets(secrets)
		fmt.Println(errors.Is(err, webhookverify.ErrNoSecret), err)
	}
	fmt.Println(webhookverify.CheckStandardSecrets([]string{"whsec_current-secret"}))
	fmt.Println(webhookverify.CheckStandardSecrets([]string{"whsec_Y3VycmVudC1zZWNyZXQtY3VycmVudC1zZWNyZXQtY3VycmVu"}))
	// Output:
	// true webhookverify: no key material to verify with: secret 1 of 1 is empty, the "whsec_" prefix alone, or zero bytes only
	// true webhookverify: no key material to verify with: secret 1 of 1 is empty, the "whsec_" prefix alone, or zero bytes only
	// true webhookverify: no key material to verify with: secret 1 of 1 is empty, the "whsec_" prefix alone, or zero bytes only
	// true webhookverify: no key material to verify with: secret 2 of 2 is empty, the "whsec_" prefix alone, or zero bytes only
	// false <nil>
	// webhookverify: no key material to verify with: secret 1 of 1 is not "whsec_" and the base64 of a key, as a Standard Webhooks secret is
	// <nil>
}

// A receiver of Standard Webhooks deliveries is the same receiver: Verify
// reads the webhook-* headers when a delivery carries them, and webhook-id
// is the idempotency key. The secrets must be Standard Webhooks secrets, as
// every secret pds issues is: check them so when the receiver starts. While
// a secret rotation is under way, pds signs with both secrets, and a
// receiver that knows either one accepts the delivery.
func Example_standardWebhooksReceiver() {
	current := "whsec_Y3VycmVudC1zZWNyZXQtY3VycmVudC1zZWNyZXQtY3VycmVu"
	previous := "whsec_cHJldmlvdXMtc2VjcmV0LXByZXZpb3VzLXNlY3JldC1wcmV2"
	if err := webhookverify.CheckStandardSecrets([]string{current}); err != nil {
		log.Fatal(err) // fail fast: never serve with no key to verify with
	}
	seen := map[string]bool{}
	receiver := func(secrets []string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
			if err != nil {
				http.Error(w, "unreadable body", http.StatusBadRequest)
				return
			}
			if err := webhookverify.Verify(r.Header, body, secrets, time.Now(), webhookverify.Options{}); err != nil {
				http.Error(w, "signature does not verify", http.StatusBadRequest)
				return
			}
			if id := r.Header.Get(webhookverify.HeaderStandardID); !seen[id] {
				seen[id] = true
				fmt.Println("handling", id)
			}
			w.WriteHeader(http.StatusNoContent)
		})
	}

	id := "5f0c2a3e9b8d4c1fa7e6d5c4b3a29180"
	// What pds sends (signed by signers) and what arrives (body).
	sent := `{"id":"` + id + `","event":"person.updated","created":"2026-11-21T10:15:30.123Z","data":{}}`
	now := time.Now()
	send := func(to http.Handler, signers []string, body string) int {
		signature, err := webhookverify.SignStandard(signers, id, now, []byte(sent))
		if err != nil {
			log.Fatal(err)
		}
		req := httptest.NewRequest(http.MethodPost, "/hooks/pds", strings.NewReader(body))
		req.Header.Set(webhookverify.HeaderStandardID, id)
		req.Header.Set(webhookverify.HeaderStandardTimestamp, strconv.FormatInt(now.Unix(), 10))
		req.Header.Set(webhookverify.HeaderStandardSignature, signature)
		rec := httptest.NewRecorder()
		to.ServeHTTP(rec, req)
		return rec.Code
	}
	fmt.Println(send(receiver([]string{current}), []string{current}, sent))
	fmt.Println(send(receiver([]string{current}), []string{current}, sent)) // a retry
	fmt.Println(send(receiver([]string{current}), []string{current}, strings.Replace(sent, "updated", "created", 1)))
	// A rotation: pds signs with the new secret and the old one, so a
	// receiver not yet given the new one still accepts the delivery...
	fmt.Println(send(receiver([]string{previous}), []string{current, previous}, sent))
	// ...until the overlap ends.
	fmt.Println(send(receiver([]string{previous}), []string{current}, sent))
	// Output:
	// handling 5f0c2a3e9b8d4c1fa7e6d5c4b3a29180
	// 204
	// 204
	// 400
	// 204
	// 400
}
