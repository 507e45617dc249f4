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
