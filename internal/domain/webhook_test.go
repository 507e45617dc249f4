package domain

import (
	"maps"
	"testing"
)

func TestWebhookWants(t *testing.T) {
	sub := func(events ...string) Webhook { return Webhook{ID: "wh_1", Events: events} }
	for _, tc := range []struct {
		name  string
		sub   Webhook
		event string
		want  bool
	}{
		{"6.1 rule 5: a subscription listing the resolved event receives it", sub(EventPersonCreated), EventPersonCreated, true},
		{"6.1 rule 5: a subscription listing person.updated receives a burst resolved to it", sub(EventPersonUpdated), EventPersonUpdated, true},
		{"6.1 rule 6: a subscription listing only person.updated receives nothing for a burst that began with creation",
			sub(EventPersonUpdated), EventPersonCreated, false},
		{"6.1 rule 6: a subscription listing only person.created receives nothing for a burst resolved to person.updated",
			sub(EventPersonCreated), EventPersonUpdated, false},
		{"6.1 rule 7: a subscription listing both receives a person.created burst", sub(EventPersonCreated, EventPersonUpdated), EventPersonCreated, true},
		{"6.1 rule 7: a subscription listing both receives a person.updated burst", sub(EventPersonCreated, EventPersonUpdated), EventPersonUpdated, true},
		{"6.1 rule 5: no hierarchy, a prefix of the event name matches nothing", sub("person"), EventPersonUpdated, false},
		{"6.1 rule 5: no fallback, a subscription listing no event receives nothing", sub(), EventPersonCreated, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.sub.Wants(tc.event); got != tc.want {
				t.Fatalf("Wants(%q) with events %v = %v, want %v", tc.event, tc.sub.Events, got, tc.want)
			}
		})
	}
}

func TestAttemptOutcome(t *testing.T) {
	code := func(n int) *int { return &n }
	for _, tc := range []struct {
		name string
		code *int
		want string
	}{
		{"2xx succeeded", code(200), AttemptSucceeded},
		{"2xx succeeded, the last of them", code(299), AttemptSucceeded},
		{"an answer below 2xx failed", code(199), AttemptFailed},
		{"a redirect failed", code(301), AttemptFailed},
		{"a 4xx failed", code(404), AttemptFailed},
		{"410 failed", code(410), AttemptFailed},
		{"a 5xx failed, though it is retried", code(503), AttemptFailed},
		{"no answer (a timeout, a connection) is an error", nil, AttemptError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := (DeliveryAttempt{StatusCode: tc.code}).Outcome(); got != tc.want {
				t.Fatalf("Outcome() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRedactSignatures(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in, want map[string]string
	}{
		{"Service-Signature keeps its time and scheme",
			map[string]string{"Service-Signature": "t=1795259056,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd"},
			map[string]string{"Service-Signature": "t=1795259056,v1=…redacted"}},
		{"webhook-signature keeps each signature's scheme",
			map[string]string{"Webhook-Signature": "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4= v1,3TmRUD1jM+3A9Nqi3yz7JZ1iqG6DqtGUmqJlxVfAn2c="},
			map[string]string{"Webhook-Signature": "v1,…redacted v1,…redacted"}},
		{"names in any case", map[string]string{"service-signature": "t=1,v1=ab", "webhook-signature": "v1,YWI="},
			map[string]string{"service-signature": "t=1,v1=…redacted", "webhook-signature": "v1,…redacted"}},
		{"other headers as they were", map[string]string{"Service-Timestamp": "1795259056", "Webhook-Id": "4b07", "Content-Type": "application/json"},
			map[string]string{"Service-Timestamp": "1795259056", "Webhook-Id": "4b07", "Content-Type": "application/json"}},
		{"a value of another shape is dropped whole", map[string]string{"Service-Signature": "5257a869e7ec", "Webhook-Signature": "YWI="},
			map[string]string{"Service-Signature": "…redacted", "Webhook-Signature": "…redacted"}},
		{"a redacted record is kept as it is", map[string]string{"Service-Signature": "t=1,v1=…redacted", "Webhook-Signature": "v1,…redacted"},
			map[string]string{"Service-Signature": "t=1,v1=…redacted", "Webhook-Signature": "v1,…redacted"}},
		{"no headers", map[string]string{}, map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := maps.Clone(tc.in)
			if got := RedactSignatures(tc.in); !maps.Equal(got, tc.want) {
				t.Fatalf("RedactSignatures(%v) = %v, want %v", tc.in, got, tc.want)
			}
			if !maps.Equal(tc.in, before) {
				t.Fatalf("RedactSignatures changed its argument to %v", tc.in)
			}
		})
	}
}
