// Package store defines the one storage interface that every engine
// (SQLite, PostgreSQL) implements. Every method that touches account data
// takes the account id; an engine never returns another account's rows.
package store

import (
	"context"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/secrets"
)

// Store is everything the service needs from persistence.
type Store interface {
	// Engine names the engine: "sqlite" or "postgres".
	Engine() string
	// Ping checks that the database answers.
	Ping(ctx context.Context) error
	// SharesBudgets says whether several instances may serve from this
	// database, so that a key's rate budget must be counted in it rather
	// than in each process.
	SharesBudgets() bool
	// Classify returns err as a *domain.UnavailableError when it says the
	// database cannot serve for now (unreachable, out of disk, past the
	// deadline), and any other error as it is. Every error a method
	// returns may be classified; a refusal (not found, conflict) never is.
	Classify(err error) error
	Close() error

	Accounts
	Keys
	Consoles
	RateCounter
	Catalog
	Persons
	PersonImports
	PersonReports
	Webhooks
	Erasures
	Secrets
}

// Secrets seals the secrets the database holds (webhook signing secrets,
// suppression secrets) under the operator's key, kept outside it.
type Secrets interface {
	// UseSecretsKeys makes the store seal what it writes under k's first
	// key and open what it reads with k's keys (nil: in clear), after
	// checking, with a key, that k holds every key the database's secrets
	// are sealed under (a *secrets.MissingKeyError otherwise).
	UseSecretsKeys(ctx context.Context, k *secrets.Keyring) error
	// SealsSecrets says whether the store writes its secrets sealed.
	SealsSecrets() bool
	// SecretKeys counts the stored secrets by the id of the key that
	// sealed them ("" for those in clear).
	SecretKeys(ctx context.Context) (map[string]int, error)
	// ResealSecrets seals again under the first key every secret not
	// sealed under it (only those in clear with onlyClear), in one
	// transaction, and returns how many it rewrote.
	ResealSecrets(ctx context.Context, onlyClear bool) (int, error)
}

// Accounts are created by the administrative command line.
type Accounts interface {
	CreateAccount(ctx context.Context, a domain.Account) error
	ListAccounts(ctx context.Context) ([]domain.Account, error)
	GetAccount(ctx context.Context, id string) (*domain.Account, error)
	// Bootstrap creates account a with key k only when the database holds no
	// account yet; it reports whether it did. Safe when several instances
	// start at once.
	Bootstrap(ctx context.Context, a domain.Account, k domain.APIKey) (bool, error)
	// RecordPublicURL notes the public URL a starting pds serve uses;
	// PublicURL is the one the last to start noted, "" when none did.
	RecordPublicURL(ctx context.Context, url string, at time.Time) error
	PublicURL(ctx context.Context) (string, error)
	// AccountCounts counts the account's persons, breadcrumbs and webhook
	// subscriptions exactly, and its pending deliveries up to PendingBound,
	// in one snapshot and a few short statements whatever the account's
	// size.
	AccountCounts(ctx context.Context, accountID string) (domain.AccountCounts, error)
}

// PendingBound bounds a count of pending deliveries (AccountCounts,
// WebhookBacklog): a backlog that large is reported as PendingBound, and
// counting it never reads more rows than that.
const PendingBound = 1_000_000

// Keys are API keys; only a hash of each secret is stored.
type Keys interface {
	CreateKey(ctx context.Context, k domain.APIKey) error
	// KeyByHash finds a key by the SHA-256 of its secret (domain.ErrNotFound if none).
	KeyByHash(ctx context.Context, hash []byte) (*domain.APIKey, error)
	ListKeys(ctx context.Context, accountID string) ([]domain.APIKey, error)
	// RevokeKey marks a key revoked; domain.ErrNotFound when absent.
	RevokeKey(ctx context.Context, keyID string, at time.Time) (revokedAt time.Time, err error)
	// RevokeAccountKey is RevokeKey for a key of the account: another
	// account's key is as absent as one that never was (the console's keys
	// page revokes through it).
	RevokeAccountKey(ctx context.Context, accountID, keyID string, at time.Time) (revokedAt time.Time, err error)
	// TouchKey records the last use of a key.
	TouchKey(ctx context.Context, keyID string, at time.Time) error
}

// Consoles keeps the console's sessions and one-time sign-in links. An
// expired one is as absent as one that never was.
type Consoles interface {
	CreateConsoleSession(ctx context.Context, s domain.ConsoleSession) error
	// ConsoleSession finds an unexpired session by the hash of its token
	// (domain.ErrNotFound if none).
	ConsoleSession(ctx context.Context, idHash []byte, now time.Time) (*domain.ConsoleSession, error)
	// EndConsoleSession deletes a session; ending one that is gone is no
	// error.
	EndConsoleSession(ctx context.Context, idHash []byte) error
	CreateConsoleLink(ctx context.Context, l domain.ConsoleLink) error
	// ConsoleLink reads an unexpired link without spending it
	// (domain.ErrNotFound if none).
	ConsoleLink(ctx context.Context, tokenHash []byte, now time.Time) (*domain.ConsoleLink, error)
	// TakeConsoleLink deletes an unexpired link and returns it: a link
	// serves once (domain.ErrNotFound if none).
	TakeConsoleLink(ctx context.Context, tokenHash []byte, now time.Time) (*domain.ConsoleLink, error)
}

// RateCounter keeps per-key request counts per fixed window, shared by every
// instance on the same database: each instance leases slices of a key's
// budget and counts them out itself (ratelimit.Shared).
type RateCounter interface {
	// LeaseRate takes up to want requests of the key's budget of limit in
	// a window for one instance: atomically min(want, limit - taken), where
	// taken is what every instance has taken (or counted) in the window.
	// It returns what it took and the window's taken total after it.
	LeaseRate(ctx context.Context, keyID string, windowStart time.Time, limit, want int) (granted, taken int, err error)
	// RateCount reads the key's count in a window without adding to it.
	RateCount(ctx context.Context, keyID string, windowStart time.Time) (int, error)
	// PruneRate drops windows that started before t.
	PruneRate(ctx context.Context, before time.Time) error
}
