package domain

import "testing"

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
