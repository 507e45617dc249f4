package store

// Webhooks holds subscriptions, the outbox of person changes, deliveries and
// their attempts.
type Webhooks interface{}
