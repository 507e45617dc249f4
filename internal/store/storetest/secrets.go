package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/secrets"
)

const (
	sealKeyA = "2b7e151628aed2a6abf7158809cf4f3c2b7e151628aed2a6abf7158809cf4f3c"
	sealKeyB = "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4"
)

// testSecretsSealed: with a key, every secret the store writes (a
// subscription's, its retired one after a rotation, an account's
// suppression secret) is held sealed under it, and reads, claims and
// suppression checks see the secrets themselves; secrets written in clear
// before are sealed by ResealSecrets; a rotation to a new key (the new one
// first, the old one after it) seals every one under the new key, after
// which the new key alone opens them all and the old one alone is refused.
func testSecretsSealed(t *testing.T, newStore NewStore) {
	ctx := context.Background()
	st := newStore(t)
	c := newPersonCase(t, st)
	clear := newWebhook(t, st, c.acc) // written before the key was set

	a, _ := secrets.Parse(sealKeyA)
	if err := st.UseSecretsKeys(ctx, a); err != nil {
		t.Fatal(err)
	}
	if n, err := st.ResealSecrets(ctx, true); err != nil || n != 1 {
		t.Fatalf("sealing what was in clear: %d, %v; want 1", n, err)
	}
	w := newWebhook(t, st, c.acc)
	queueDelivery(t, st, w, Epoch) // signed with w's first secret, kept retired
	rotated, _, err := st.RotateWebhookSecret(ctx, c.acc, w.ID, "whsec_"+domain.RandomHex(16), Epoch, Epoch.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := c.upsert(domain.PersonUpsert{Email: setText("sealed@example.com")})
	if _, err := st.ErasePerson(ctx, c.acc, p.ID, domain.EraseRequest{Suppress: true, KeyID: "key_eraser"}, c.write()); err != nil {
		t.Fatal(err)
	}
	onlyUnder := func(id string) {
		t.Helper()
		keys, err := st.SecretKeys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// clear's and w's current secrets, w's previous and retired ones,
		// the suppression secret.
		if len(keys) != 1 || keys[id] != 5 {
			t.Fatalf("stored secrets by key: %v, want 5 under %s alone", keys, id)
		}
	}
	onlyUnder(a.ID())
	read := func() {
		t.Helper()
		got, err := st.GetWebhook(ctx, c.acc, w.ID)
		if err != nil || got.Secret != rotated.Secret || got.Previous == nil || got.Previous.Secret != w.Secret {
			t.Fatalf("the rotated subscription reads %+v, %v", got, err)
		}
		if got, err := st.GetWebhook(ctx, c.acc, clear.ID); err != nil || got.Secret != clear.Secret {
			t.Fatalf("the subscription sealed afterwards reads %+v, %v", got, err)
		}
		_, _, err = st.UpsertPerson(ctx, c.acc, domain.PersonUpsert{Email: setText("sealed@example.com")}, c.write())
		if se := (*domain.SuppressedError)(nil); !asSuppressed(err, &se) {
			t.Fatalf("the suppressed email after sealing: %v", err)
		}
	}
	read()

	both, _ := secrets.Parse(sealKeyB + "\n" + sealKeyA)
	if err := st.UseSecretsKeys(ctx, both); err != nil {
		t.Fatal(err)
	}
	if n, err := st.ResealSecrets(ctx, false); err != nil || n != 5 {
		t.Fatalf("the rotation resealed %d, %v; want 5", n, err)
	}
	onlyUnder(both.ID())
	b, _ := secrets.Parse(sealKeyB)
	if err := st.UseSecretsKeys(ctx, b); err != nil {
		t.Fatal(err)
	}
	read()
	jobs, err := st.ClaimDeliveries(ctx, Epoch.Add(time.Hour), time.Minute, 10)
	if err != nil {
		t.Fatal(err)
	}
	signed := 0
	for _, job := range jobs {
		switch {
		case job.WebhookID == clear.ID && job.Secret != clear.Secret:
			t.Fatalf("a delivery of the subscription sealed afterwards signs with %q", job.Secret)
		case job.WebhookID == w.ID && job.SecretVersion == 1:
			if job.Secret != w.Secret || job.CurrentSecret != rotated.Secret || job.Previous == nil || job.Previous.Secret != w.Secret {
				t.Fatalf("the delivery queued before the rotation signs with %q (current %q), want the retired %q", job.Secret, job.CurrentSecret, w.Secret)
			}
			signed++
		}
	}
	if signed != 1 {
		t.Fatalf("claimed %d deliveries, none queued before the rotation", len(jobs))
	}
	if err := st.UseSecretsKeys(ctx, a); err == nil {
		t.Fatal("the old key alone is accepted after the rotation")
	}
	if err := st.UseSecretsKeys(ctx, b); err != nil {
		t.Fatal(err)
	}
}

func asSuppressed(err error, target **domain.SuppressedError) bool { return errors.As(err, target) }

// testHeadersSealed: a subscription's headers are held as its secret is:
// sealed under the key once one is set (those written in clear before are
// sealed by ResealSecrets), read and claimed as written.
func testHeadersSealed(t *testing.T, newStore NewStore) {
	ctx := context.Background()
	st := newStore(t)
	acc := NewAccount(t, st)
	headers := map[string]string{"Authorization": "Bearer sealed-0123456789", "X-Route": "eu"}
	w := domain.Webhook{
		ID: domain.NewID("wh"), AccountID: acc, Name: "gateway", TargetURL: "https://example.com/hook",
		Events: []string{domain.EventPersonCreated}, IsActive: true, Secret: "whsec_" + domain.RandomHex(16), SecretVersion: 1,
		SignatureScheme: domain.SchemePDS, Headers: headers, CreatedAt: Epoch, UpdatedAt: Epoch,
	}
	if err := st.CreateWebhook(ctx, w); err != nil {
		t.Fatal(err)
	}
	a, _ := secrets.Parse(sealKeyA)
	if err := st.UseSecretsKeys(ctx, a); err != nil {
		t.Fatal(err)
	}
	// The secret and the headers, each its own sealed value.
	if n, err := st.ResealSecrets(ctx, true); err != nil || n != 2 {
		t.Fatalf("sealing what was in clear: %d, %v; want 2", n, err)
	}
	replaced := map[string]string{"Authorization": "Bearer next-0123456789"}
	if _, err := st.UpdateWebhook(ctx, acc, w.ID, domain.WebhookUpdate{Headers: replaced}, Epoch); err != nil {
		t.Fatal(err)
	}
	keys, err := st.SecretKeys(ctx)
	if err != nil || len(keys) != 1 || keys[a.ID()] != 2 {
		t.Fatalf("stored secrets by key: %v, %v; want 2 under %s alone", keys, err, a.ID())
	}
	got, err := st.GetWebhook(ctx, acc, w.ID)
	if err != nil || len(got.Headers) != 1 || got.Headers["Authorization"] != replaced["Authorization"] {
		t.Fatalf("read %+v, %v", got, err)
	}
	queueDelivery(t, st, *got, Epoch)
	if job := claimOneDelivery(t, st, Epoch); job.Headers["Authorization"] != replaced["Authorization"] {
		t.Fatalf("claimed with headers %v", job.Headers)
	}
	if _, err := st.UpdateWebhook(ctx, acc, w.ID, domain.WebhookUpdate{Headers: map[string]string{}}, Epoch); err != nil {
		t.Fatal(err)
	}
	if keys, _ := st.SecretKeys(ctx); keys[a.ID()] != 1 {
		t.Fatalf("after removing the headers: %v", keys)
	}
}
