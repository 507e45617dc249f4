package webhook

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

// BenchmarkAttemptHeaders: what signing one attempt costs in each scheme
// (a 2 KiB body; under standard-webhooks, in a rotation's overlap, two
// secrets), beside the delivery worker's whole attempt (pdsbench --rows
// delivery).
func BenchmarkAttemptHeaders(b *testing.B) {
	at := time.Unix(1_800_000_000, 0)
	job := domain.DeliveryJob{
		Delivery:      domain.Delivery{ID: "5f0c2a3e9b8d4c1fa7e6d5c4b3a29180", Body: bytes.Repeat([]byte("x"), 2048)},
		Secret:        NewSecret(),
		CurrentSecret: NewSecret(),
	}
	for _, scheme := range domain.SignatureSchemes {
		b.Run(scheme, func(b *testing.B) {
			job.SignatureScheme = scheme
			for b.Loop() {
				if err := setAttemptHeaders(http.Header{}, job, at); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBody: making one delivery's body around a rendered person, as
// closing a burst does for each subscription, inside its transaction.
func BenchmarkBody(b *testing.B) {
	data := []byte(`{"id":"per_0123456789abcdef","external_id":"ext-1","email":"p1@bench.example","first_name":"First 1","last_name":"Last","name":"First 1 Last","phone":"+15550000001","language":null,"pseudonym":null,"occupation":null,"age":null,"ethnicity":null,"income":null,"edu":null,"companies":[],"address":{},"tags":[],"tag_ids":[],"email_opt_out":false,"is_archived":false,"upsert_result":"created","0_person_url":"http://127.0.0.1/persons/per_0123456789abcdef","custom_fields":{},"custom_data":{}}`)
	at := time.Unix(1_800_000_000, 0)
	for b.Loop() {
		if _, err := Body("5f0c2a3e9b8d4c1fa7e6d5c4b3a29180", domain.EventPersonUpdated, at, data); err != nil {
			b.Fatal(err)
		}
	}
}
