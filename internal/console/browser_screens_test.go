//go:build unix

package console_test

import (
	"context"
	"crypto/sha256"
	"net/http"
	"slices"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/pds-dev/pds/internal/domain"
)

// keysFlow mints a key through the keys page with the scopes and expiry
// chosen, sees it once and uses it against the API, then revokes it there
// and sees the API refuse it.
func keysFlow(t *testing.T, e *env, b *tab, s seeded) {
	t.Helper()
	ctx := context.Background()
	b.open(e.url, "/console/keys")
	b.wantText("the keys", "New key", "this session", "active")
	b.check("keys")
	b.set("f-name", "CI deploy")
	b.do("choose persons:read", chromedp.Click(chromedp.CSS(`input[name=scopes][value="persons:read"]`)))
	b.do("choose tags:read", chromedp.Click(chromedp.CSS(`input[name=scopes][value="tags:read"]`)))
	b.do("expires in 30 days", chromedp.SetValue(chromedp.ID("f-expires_in"), "720h"))
	b.submit("mint", `form[method=post][action="/console/keys"] button[type=submit]`)
	b.wantText("the new key", "This is the only time the key is shown", "persons:read", "tags:read")
	secret, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.ID("secret")))
	if err != nil {
		t.Fatal(err)
	}
	b.check("key-secret")
	sum := sha256.Sum256([]byte(secret))
	k, err := e.st.KeyByHash(ctx, sum[:])
	if err != nil || k.AccountID != s.account || k.Name == nil || *k.Name != "CI deploy" || k.ExpiresAt == nil ||
		!slices.Equal(k.Scopes, []domain.Scope{domain.ScopePersonsRead, domain.ScopeTagsRead}) {
		t.Fatalf("the minted key as stored: %+v, %v", k, err)
	}
	if status, _ := e.call(secret, get("/persons/"+s.ada.ID)); status != http.StatusOK {
		t.Fatalf("the minted key reads a person: %d", status)
	}
	b.open(e.url, "/console/keys")
	b.wantText("the keys", "CI deploy", "2 keys")
	b.submit("revoke", `form[action="/console/keys/`+k.ID+`/revoke"] button[type=submit]`)
	b.wantText("the revocation", "Revoked", "revoked")
	if status, _ := e.call(secret, get("/persons/"+s.ada.ID)); status != http.StatusUnauthorized {
		t.Fatalf("the revoked key reads a person: %d", status)
	}
}

// breadcrumbsFlow lists the account's breadcrumbs and filters them by
// flavor and person, as List Breadcrumbs does.
func breadcrumbsFlow(t *testing.T, e *env, b *tab, s seeded) {
	t.Helper()
	b.open(e.url, "/console/breadcrumbs")
	b.wantText("the breadcrumbs", "3 breadcrumbs", "page_view", "form_submission", s.ada.ID)
	b.check("breadcrumbs")
	b.do("flavor", chromedp.SetValue(chromedp.ID("flavor"), "email_view"))
	b.set("person_id", s.ada.ID)
	b.submit("filter", `form[aria-label="Filter the breadcrumbs"] button[type=submit]`)
	b.wantText("the filtered breadcrumbs", "1 breadcrumb", "email_view")
}

// accountLogFlow reads the log of every subscription, with each
// delivery's person named by email beside its id, and narrows it.
func accountLogFlow(t *testing.T, e *env, b *tab, s seeded, hook domain.Webhook) {
	t.Helper()
	b.open(e.url, "/console/deliveries")
	b.wantText("every subscription's log", "2 deliveries", "CRM sync", "ada@example.org", s.ada.ID, "succeeded")
	b.check("deliveries")
	b.do("only failed", chromedp.SetValue(chromedp.ID("status"), "failed"))
	b.do("of the last hour", chromedp.SetValue(chromedp.ID("within"), "1h"))
	b.do("only this subscription", chromedp.SetValue(chromedp.ID("webhook_id"), hook.ID))
	b.submit("filter", `form[aria-label="Filter the deliveries"] button[type=submit]`)
	b.wantText("the failed deliveries", "0 deliveries") // both redelivered, and answered
}
