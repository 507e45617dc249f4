package httpapi_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/internal/webhook/webhooktest"
	"github.com/pds-dev/pds/pkg/webhookverify"
)

// subscriptionExtras are the members issue 67 added to a subscription.
type subscriptionExtras struct {
	ID             string            `json:"id"`
	Secret         string            `json:"secret"`
	Headers        map[string]string `json:"headers"`
	MaxPerSecond   int               `json:"max_per_second"`
	IncludeChanges bool              `json:"include_changes"`
}

// TestSubscriptionHeaders: headers are taken on create and replaced whole
// by a PATCH ({} removes them), every read masks their values, reserved
// and malformed names and values are refused naming the member, every
// attempt carries them (still signed), and the delivery log redacts them.
func TestSubscriptionHeaders(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		rc := webhooktest.NewReceiver(t)
		env := newWebhookEnv(t, eng, webhooktest.Settings(rc))
		key := env.Key(env.NewAccount())
		const token = "Bearer 0123456789abcdefWXYZ"
		create := func(headers any) map[string]any {
			return map[string]any{"name": "gateway", "target_url": rc.URL, "events": []string{"person.created"}, "headers": headers}
		}

		var sub subscriptionExtras
		env.Post(key, "/webhooks", create(map[string]string{"Authorization": token, "X-Route": "eu"})).Want(201).JSON(&sub)
		if want := map[string]string{"Authorization": "...WXYZ", "X-Route": "..."}; fmt.Sprint(sub.Headers) != fmt.Sprint(want) {
			t.Fatalf("create answers headers %v, want %v", sub.Headers, want)
		}
		var read subscriptionExtras
		env.Get(key, "/webhooks/"+sub.ID).Want(200).JSON(&read)
		if fmt.Sprint(read.Headers) != fmt.Sprint(sub.Headers) || sub.MaxPerSecond != 0 || sub.IncludeChanges {
			t.Fatalf("read %+v after create %+v", read, sub)
		}

		refused := map[string]map[string]string{
			"/headers/Bad Name":          {"Bad Name": "x"},
			"/headers/content-type":      {"content-type": "text/plain"},
			"/headers/Service-Signature": {"Service-Signature": "t=1,v1=00"},
			"/headers/Webhook-Id":        {"Webhook-Id": "x"},
			"/headers/traceparent":       {"traceparent": "00-x"},
			"/headers/Connection":        {"Connection": "close"},
			"/headers/Transfer-Encoding": {"Transfer-Encoding": "chunked"},
			"/headers/Host":              {"Host": "evil.example"},
			"/headers/X-Split":           {"X-Split": "a\r\nX-Evil: 1"},
			"/headers/X-Nul":             {"X-Nul": "a\x00b"},
			"/headers":                   {"X-Big": strings.Repeat("a", 4097)},
		}
		many := map[string]string{}
		for i := range 11 {
			many[fmt.Sprintf("X-H%d", i)] = "v"
		}
		for pointer, headers := range refused {
			wantInvalid(t, env.Post(key, "/webhooks", create(headers)).Want(400).Problem(), pointer)
		}
		wantInvalid(t, env.Post(key, "/webhooks", create(many)).Want(400).Problem(), "/headers")
		wantInvalid(t, env.Post(key, "/webhooks", create(map[string]any{"X-Num": 5})).Want(400).Problem(), "/headers/X-Num")
		wantInvalid(t, env.Patch(key, "/webhooks/"+sub.ID, map[string]any{"headers": nil}).Want(400).Problem(), "/headers")
		wantInvalid(t, env.Patch(key, "/webhooks/"+sub.ID, map[string]any{"headers": map[string]string{"Te": "x"}}).Want(400).Problem(), "/headers/Te")
		if p := listOf[subscriptionExtras](env.Env, key, "/webhooks"); p.Total != 1 || len(p.Items[0].Headers) != 2 {
			t.Fatalf("a refused write changed something: %+v", p)
		}

		env.touch(key, "p1")
		env.Clock.Advance(env.window)
		env.run()
		reqs := rc.Requests()
		if len(reqs) != 1 {
			t.Fatalf("%d deliveries, want 1", len(reqs))
		}
		if got := reqs[0].Header.Get("Authorization"); got != token || reqs[0].Header.Get("X-Route") != "eu" {
			t.Fatalf("the attempt carried Authorization %q, X-Route %q", got, reqs[0].Header.Get("X-Route"))
		}
		if err := webhookverify.Verify(reqs[0].Header, reqs[0].Body, []string{sub.Secret}, env.Clock.Now(), webhookverify.Options{}); err != nil {
			t.Fatalf("a delivery with headers does not verify: %v", err)
		}
		var detail struct {
			AttemptLog []struct {
				RequestHeaders map[string]string `json:"request_headers"`
			} `json:"attempt_log"`
		}
		id := reqs[0].Header.Get(webhookverify.HeaderDeliveryID)
		env.Get(key, "/webhooks/"+sub.ID+"/deliveries/"+id).Want(200).JSON(&detail)
		logged := detail.AttemptLog[0].RequestHeaders
		if logged["Authorization"] != domain.Redacted || logged["X-Route"] != domain.Redacted {
			t.Fatalf("the log keeps %v", logged)
		}
		if raw := env.Get(key, "/webhooks/"+sub.ID+"/deliveries/"+id).Want(200).Body; strings.Contains(string(raw), "0123456789") {
			t.Fatal("the delivery log shows a header's value")
		}

		// A PATCH replaces the set whole; {} removes it.
		var patched subscriptionExtras
		env.Patch(key, "/webhooks/"+sub.ID, map[string]any{"headers": map[string]string{"X-Tenant": "acme"}}).Want(200).JSON(&patched)
		if len(patched.Headers) != 1 || patched.Headers["X-Tenant"] != "..." {
			t.Fatalf("patched headers %v", patched.Headers)
		}
		env.Patch(key, "/webhooks/"+sub.ID, map[string]any{"name": "renamed"}).Want(200).JSON(&patched)
		if len(patched.Headers) != 1 {
			t.Fatalf("a PATCH without headers changed them: %v", patched.Headers)
		}
		var emptied subscriptionExtras
		env.Patch(key, "/webhooks/"+sub.ID, map[string]any{"headers": map[string]string{}}).Want(200).JSON(&emptied)
		if emptied.Headers == nil || len(emptied.Headers) != 0 {
			t.Fatalf("headers after {}: %v", emptied.Headers)
		}
		env.touch(key, "p2")
		env.Clock.Advance(env.window)
		env.run()
		if reqs = rc.Requests(); len(reqs) != 2 || reqs[1].Header.Get("Authorization") != "" || reqs[1].Header.Get("X-Tenant") != "" {
			t.Fatalf("after removing the headers: %d requests, %v", len(reqs), reqs[len(reqs)-1].Header)
		}
	})
}
