package webhookverify_test

import (
	"strings"
	"testing"

	"github.com/pds-dev/pds/pkg/webhookverify"
)

// BenchmarkVerify: one verification of a 4 KiB body against two secrets
// (a rotation in progress), the matching one second.
func BenchmarkVerify(b *testing.B) {
	payload := []byte(strings.Repeat("x", 4096))
	h := headers(webhookverify.Sign(secret, signedAt, payload))
	secrets := []string{"whsec_previous", secret}
	b.SetBytes(int64(len(payload)))
	for b.Loop() {
		if err := webhookverify.Verify(h, payload, secrets, signedAt, webhookverify.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
