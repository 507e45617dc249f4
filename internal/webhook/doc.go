// Package webhook delivers person events to subscribers: it closes bursts
// of changes into deliveries, signs and sends them through a client that
// only reaches public addresses, and applies the retry and deactivation
// policy (decisions.md section 8).
//
// # From a person change to a receiver
//
// A write of a person records its change in the person's outbox row (bursts)
// in its own transaction (sqlstore's changeAndRecord), as
// service.BurstAfterChange decides: a burst opens, or slides, within the
// coalescing window. From there the Worker (worker.go) takes over; any number
// of workers, in one process or many, share one database, since all their
// work is rows leased in the project's own tables (Jobs).
//
//  1. Closing. The worker claims due bursts under a lease (burstLease) and
//     closes them in one transaction (store.CloseBursts): the claim's rows
//     locked by one statement that passes over a row a writer holds (a later
//     claim closes it once the lease has run out), the closed ones deleted,
//     the deliveries written by multi-row INSERTs. service.CloseBurst decides
//     each on the row locked under the claim's lease, and each delivered
//     burst becomes one delivery per active subscription whose events list
//     the burst's event. Every person is rendered once, before the
//     transaction (PersonRenderer.RenderMany: the account's custom fields
//     read once, the persons together), since rendering inside it would take
//     a second connection while writers wait for the rows it holds. An
//     account whose last close had no listeners is not rendered; should its
//     transaction find one after all, it is given up (errRenderFirst) and
//     run again with its persons rendered. A batch that fails is closed
//     again burst by burst (store.CloseBurst).
//  2. Dispatching (dispatch.go). Settings.Concurrency attempt slots, at most
//     Settings.PerSubscription of them for one subscription, and a slot goes
//     to the next queued delivery the moment it frees: no batch waits for its
//     slowest attempt, so a slow or silent receiver holds only its own
//     subscription's slots. store.ClaimDeliveriesFairly leases due
//     deliveries into per-subscription queues, in turn across accounts, then
//     across an account's subscriptions. A subscription may hold a few times
//     its bound claimed, deeper while its receiver answers quickly, as far as
//     the worker's own bound allows (maxClaimed): each claim is a write
//     transaction, and a fast receiver is fed only as fast as claims bring
//     deliveries in. A delivery due at once whose subscription has no
//     backlog is leased to this worker as it is made, in the closing
//     transaction (makerLease), and queued once that commits: no claim stands
//     between a change and its POST. An attempt never starts on a lease that
//     could run out before it is recorded (leaseCovers); such a delivery is
//     claimed again once its lease has run out.
//  3. Attempting. Each attempt POSTs the signed body through a client that
//     keeps connections to receivers alive and checks every new connection
//     against the address rules as it dials (client.go, guard.go: the SSRF
//     guard, which also checks a target_url when it is set); redirects are
//     never followed and no proxy is used. Settings.Decide (policy.go)
//     chooses the next step: 2xx succeeds; a timeout, a connection error or a
//     5xx is retried on the schedule; any 3xx or 4xx fails at once, 410 also
//     retiring the subscription; a failure streak deactivates it.
//  4. Recording (recorder.go). Finished attempts are written in batches,
//     whatever finished while the last batch was written, in one transaction
//     (store.FinishAttempts: subscriptions then deliveries locked in id
//     order, the order CloseBurst(s) also follow), falling back to one
//     FinishAttempt each when a batch fails. The same transaction adds the
//     batch's tally to the hourly attempt counts by subscription and outcome.
//
// Run does all this continuously (bursts in a goroutine of their own, the
// dispatcher woken by finished attempts, closed bursts and every
// PollInterval) and prunes deliveries past retention and the change feed's
// tombstones; RunOnce does it until nothing due is left and everything is
// recorded, for tests and tools. Every lease, time and schedule comes from
// the injected clock, so tests drive windows and retries without sleeping;
// an Observer (internal/metrics in pds serve) hears of every recorded
// attempt.
//
// # A subscription's headers, rate and changes, and webhook.disabled
//
// A subscription's own headers (headers.go: CheckHeaders refuses reserved
// and malformed ones) are set on every attempt before the signed ones and
// recorded with redacted values (redactCustom). Its max_per_second is a
// budget per wall-clock second shared by the fleet (rate.go): the
// dispatcher leases a few attempts of the current second from the
// database (store LeaseRate, as the API keys' shared budgets) before
// starting them, starts them only within that second, signed at the time
// it checked, and leaves the rest queued; its queue is held to two seconds
// of budget. include_changes (changes.go) adds the members a person.updated
// burst changed (service.ChangedMembers), comparing the person as rendered
// for the body with what its previous closed burst rendered, which the
// worker keeps after each close (store KeepDeliveredStates) for the
// accounts that include changes. webhook.disabled deliveries are made by
// the store, in the transaction that deactivates a subscription
// (FinishAttempts), and go out as any other delivery.
//
// # Outages and stopping
//
// The worker classifies every failure as the API does (Worker.failed) and
// tells the outage log. A batch of bursts it claimed, or of attempt records,
// is written again once the database is back, as long as its lease holds
// (Worker.untilServed), so that no receiver gets a delivery twice and nothing
// waits for a lease to run out. At shutdown the dispatcher stops starting
// attempts and hands its queued deliveries back (dispatcher.stop,
// store.ReleaseDeliveries).
//
// # Local listeners
//
// A local listener's subscription (domain.Webhook.LocalListener, made only
// by pds webhooks listen through the store, never by the API; a target_url
// set through the API ends it) targets http://127.0.0.1:PORT/ on the host it
// names. Its deliveries go through a second client whose guard dials
// loopback addresses and nothing else (Guard.LoopbackOnly, NewLocalClient),
// and only an instance on that host takes them (store.DeliveryClaim.Host),
// since 127.0.0.1 elsewhere is another machine. With --webhook-allow-private,
// Guard.CheckURL also takes plain http on a loopback host, and only there,
// for ordinary subscriptions.
//
// # Signing and the delivery log
//
// The body is rendered once (Body) and every attempt sends it unchanged.
// Every attempt carries the spec's Service-* headers, signed with the secret
// of the delivery's version (SetHeaders); a subscription whose
// signature_scheme is standard-webhooks also gets that specification's
// webhook-* headers (SetStandardHeaders), signed with every secret
// StandardSecrets names: the current one, the delivery's own, and the
// previous one until the overlap a rotation opens has ended
// (Settings.RotationOverlap). pkg/webhookverify checks both schemes.
//
// The delivery log is the deliveries table itself. Each attempt's record
// keeps the headers the worker set on its request (sentHeaders), never the
// secret, and each signature with its time and scheme but not its value
// (domain.RedactSignatures, applied as the store writes and reads them),
// since a value read from the log, the database or a backup could be
// replayed to the receiver within its timestamp tolerance. A redelivery is
// one rule in the store (requeue): the deliveries it selects of an active
// subscription become pending, due now, in a fresh round, signed with the
// current secret, except one whose attempt is in flight.
package webhook
