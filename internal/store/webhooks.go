package store

import (
	"context"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

// Webhooks holds subscriptions, the outbox of person changes, deliveries and
// their attempts.
//
// Bursts and deliveries are durable jobs: a worker claims due rows with a
// lease (a token and an expiry, both from the caller's clock), and finishes
// only the rows whose token it still holds. A crashed worker's lease expires
// and another claim takes the row over; two workers never hold one row.
type Webhooks interface {
	CreateWebhook(ctx context.Context, w domain.Webhook) error
	// GetWebhook returns a subscription of the account or domain.ErrNotFound.
	GetWebhook(ctx context.Context, accountID, id string) (*domain.Webhook, error)
	// ListWebhooks pages the account's subscriptions, oldest first.
	ListWebhooks(ctx context.Context, accountID string, p domain.PageRequest) ([]domain.Webhook, int, error)
	// UpdateWebhook applies u. Deactivating cancels the pending deliveries;
	// reactivating clears the failure streak and the disabled reason.
	UpdateWebhook(ctx context.Context, accountID, id string, u domain.WebhookUpdate, now time.Time) (*domain.Webhook, error)
	// DeleteWebhook removes a subscription with its deliveries and secrets.
	DeleteWebhook(ctx context.Context, accountID, id string) error
	// RotateWebhookSecret keeps the current secret as a retired version and
	// installs secret as the next one. It returns the subscription and where
	// the pending deliveries still signed with the retired secret stand in the
	// retry schedule (empty when none: that secret is then deleted at once).
	// The retired secret also stays the subscription's Previous until
	// overlapUntil, for the schemes that sign with both.
	RotateWebhookSecret(ctx context.Context, accountID, id, secret string, now, overlapUntil time.Time) (*domain.Webhook, []domain.PendingRound, error)

	// ListDeliveries pages a subscription's deliveries that f lets
	// through, newest first (creation time, then id), with their exact
	// total.
	ListDeliveries(ctx context.Context, accountID, webhookID string, f domain.DeliveryFilter, p domain.PageRequest) ([]domain.Delivery, int, error)
	// ListAccountDeliveries pages the deliveries of every subscription of
	// the account that f lets through, in ListDeliveries' order, with their
	// exact total.
	ListAccountDeliveries(ctx context.Context, accountID string, f domain.DeliveryFilter, p domain.PageRequest) ([]domain.Delivery, int, error)
	// GetDelivery returns one delivery, its body as sent included, with its
	// attempts, oldest first.
	GetDelivery(ctx context.Context, accountID, webhookID, id string) (*domain.Delivery, []domain.DeliveryAttempt, error)
	// Redeliver makes a delivery pending again, due at now, in a fresh round
	// of the retry schedule and signed with the current secret. A delivery
	// being attempted right now, or one of an inactive subscription, is a
	// *domain.ConflictError.
	Redeliver(ctx context.Context, accountID, webhookID, id string, now time.Time) (*domain.Delivery, error)
	// RedeliverFailed redelivers, as Redeliver does one, every failed
	// delivery of the subscription created at or after since, in one
	// transaction, and returns how many. A failed delivery still being
	// attempted (cancelled while in flight) is left alone. An inactive
	// subscription is Redeliver's *domain.ConflictError.
	RedeliverFailed(ctx context.Context, accountID, webhookID string, since, now time.Time) (int, error)

	// ClaimBursts leases up to limit bursts due at now.
	ClaimBursts(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]domain.Burst, error)
	// CloseBurst deletes a claimed burst, when it is still due as claimed,
	// and inserts the deliveries build makes from the account's active
	// subscriptions, in one transaction. When a later change moved the
	// burst, it releases the lease instead and reports false. An error from
	// build rolls everything back: the burst stays, and is claimed again
	// once the lease runs out.
	CloseBurst(ctx context.Context, b domain.Burst, build DeliveryBuilder) (bool, error)
	// ClaimDeliveries leases up to limit pending deliveries of active
	// subscriptions that are due at now, as ClaimDeliveriesFairly with no
	// Host (so none of a local listener).
	ClaimDeliveries(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]domain.DeliveryJob, error)
	// ClaimDeliveriesFairly leases due pending deliveries of active
	// subscriptions as c bounds them. Among the oldest due deliveries of the
	// subscriptions with room, it takes them in turn across accounts, and
	// within an account across its subscriptions, rather than strictly
	// oldest first.
	ClaimDeliveriesFairly(ctx context.Context, now time.Time, lease time.Duration, c DeliveryClaim) ([]domain.DeliveryJob, error)
	// ReleaseDeliveries hands claimed deliveries back before their lease
	// runs out, unattempted (a worker that stops), so that any instance may
	// claim them at once. A job whose lease another claim holds by now is
	// left alone.
	ReleaseDeliveries(ctx context.Context, jobs []domain.DeliveryJob) error
	// FinishAttempt records an attempt of a claimed delivery and its effect
	// on the subscription, in one transaction. A lease lost to another
	// worker records nothing.
	FinishAttempt(ctx context.Context, job domain.DeliveryJob, r AttemptResult) error
	// FinishAttempts records many attempts as FinishAttempt records each,
	// in order, all in one transaction: all or nothing.
	FinishAttempts(ctx context.Context, done []FinishedAttempt) error
	// CloseBursts closes many claimed bursts as CloseBurst closes each,
	// all in one transaction: all or nothing. build is called once per
	// burst to be delivered, with the burst's account's active
	// subscriptions; closed reports, per burst, what CloseBurst would,
	// but for a burst a concurrent writer holds at that moment, which it
	// leaves (false) rather than wait for while holding the others: a
	// CloseBurst of it waits for that writer.
	CloseBursts(ctx context.Context, bursts []domain.Burst, build BurstBuilder) (closed []bool, err error)
	// ActiveSubscriptions reads the active subscriptions of the accounts,
	// by account, without locking them: what a closing burst is likely to
	// find, read before its transaction so that the persons to render can
	// be rendered before it.
	ActiveSubscriptions(ctx context.Context, accounts []string) (map[string][]domain.Webhook, error)
	// AttemptCounts reads the account's attempts counted by subscription,
	// hour and outcome (domain.DeliveryAttempt.Outcome), for the hours at
	// or after since's hour, ordered by subscription id, then hour. An hour
	// without attempts has no row. The counts are kept with each attempt's
	// record (FinishAttempts), so this reads one row per subscription and
	// hour whatever the volume; a deleted subscription's go with it.
	AttemptCounts(ctx context.Context, accountID string, since time.Time) ([]domain.AttemptCount, error)
	// PruneDeliveries deletes, with their attempts, the finished deliveries
	// (succeeded or failed, no lease held) of every account whose last
	// activity (last attempt, else creation) is before `before`, at most
	// batch rows per statement, and returns how many it deleted. Pending
	// deliveries are never deleted. It also deletes the attempt counts of
	// the hours that ended by `before`.
	PruneDeliveries(ctx context.Context, before time.Time, batch int) (int, error)
	// DeliveredStates reads what the persons' last closed bursts told of
	// the members a body's changes compares, by person; a person with
	// none kept is absent.
	DeliveredStates(ctx context.Context, accountID string, personIDs []string) (map[string]domain.TrackedMembers, error)
	// KeepDeliveredStates keeps them as the start of each person's next
	// burst, replacing what was kept, for persons that still exist (an
	// erased or merged person's go with it and are not written again).
	KeepDeliveredStates(ctx context.Context, accountID string, states map[string]domain.TrackedMembers) error
	// WebhookBacklog reads where the pipeline stands over every account,
	// with bounded statements (for metrics, at every scrape).
	WebhookBacklog(ctx context.Context, now time.Time) (WebhookBacklog, error)
}

// DeliveryBuilder makes the deliveries of a closing burst from the
// account's active subscriptions; nil makes none.
type DeliveryBuilder func(active []domain.Webhook) ([]domain.Delivery, error)

// BurstBuilder makes the deliveries of one of many closing bursts. A job
// with a LeaseToken is made leased, until its Delivery.LeaseUntil, as a
// claim would have leased it, so that its maker attempts it without a claim
// of its own; TargetURL, Secret and the local listener's fields are the
// maker's and are not stored. The
// builder may be called again for the same burst when the transaction is
// run again; only the last call's jobs are made.
type BurstBuilder func(b domain.Burst, active []domain.Webhook) ([]domain.DeliveryJob, error)

// DeliveryClaim bounds a claim of deliveries.
type DeliveryClaim struct {
	// Limit is the most deliveries claimed in all.
	Limit int
	// PerSubscription is the most claimed of one subscription not listed
	// in Room (0: no bound but Limit); Room is the most claimed of each
	// subscription listed (0 or less: none).
	PerSubscription int
	Room            map[string]int
	// Host is the claiming instance's host name: the deliveries of a
	// local listener's subscription (domain.Webhook.LocalListener) are
	// claimed only by an instance on the listener's host, whose loopback
	// the target names.
	Host string
}

// FinishedAttempt is one attempt to record.
type FinishedAttempt struct {
	Job    domain.DeliveryJob
	Result AttemptResult
}

// AttemptResult is the outcome of one attempt, as the delivery policy
// decided it.
type AttemptResult struct {
	Attempt domain.DeliveryAttempt
	// Status is the delivery's next status: pending (a retry is due at
	// NextAttemptAt), succeeded or failed.
	Status        string
	NextAttemptAt *time.Time
	// Error describes the failure for the delivery and the subscription.
	Error *string
	// Gone retires the subscription at once (410).
	Gone bool
	// Deactivate decides, from the failure streak including this failed
	// delivery, whether the subscription is switched off.
	Deactivate func(streakStart time.Time, failures int) bool
}

// WebhookBacklog is where the webhook pipeline stands, over every account
// (for metrics).
type WebhookBacklog struct {
	// Pending counts pending deliveries, up to PendingBound; OpenBursts
	// the bursts not closed yet, up to the same bound.
	Pending, OpenBursts int
	// OldestDue is the due time of the oldest pending delivery that is due
	// at the time asked about; nil when none is.
	OldestDue *time.Time
	// Inactive counts the inactive subscriptions by disabled reason
	// (domain.DisabledFailures, DisabledGone, DisabledManual).
	Inactive map[string]int
}
