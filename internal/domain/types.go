package domain

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"math"
	"time"
)

// Account owns every other resource.
type Account struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
}

// AccountCounts is how much an account holds: exact counts but for
// PendingDeliveries, which stops at the store's bound (store.PendingBound).
type AccountCounts struct {
	Persons, Breadcrumbs, Subscriptions, PendingDeliveries int
}

// APIKey is a stored key: never the secret, only its hash.
type APIKey struct {
	ID         string
	AccountID  string
	Name       *string
	Prefix     string
	LastFour   string
	Hash       []byte
	Scopes     []Scope
	RateLimit  *int // per minute; nil means the server default
	ExpiresAt  *time.Time
	RevokedAt  *time.Time
	LastUsedAt *time.Time
	CreatedAt  time.Time
	// AccountSuppresses says whether the key's account held any
	// suppression when the key was read by its hash; the key cache's sync
	// keeps it true as it keeps the key (every suppression added or lifted
	// counts as a key change), so a write of an account without
	// suppressions need not look them up.
	AccountSuppresses bool
}

// HasScope tells whether the key grants s.
func (k *APIKey) HasScope(s Scope) bool {
	for _, have := range k.Scopes {
		if have == s {
			return true
		}
	}
	return false
}

// LimitOr is the key's own per-minute rate limit, or def, the server's
// default, when it has none.
func (k *APIKey) LimitOr(def int) int {
	if k.RateLimit != nil {
		return *k.RateLimit
	}
	return def
}

// Require is nil when the key grants s, else the *ScopeError that refuses
// the operation.
func (k *APIKey) Require(s Scope) error {
	if k.HasScope(s) {
		return nil
	}
	return &ScopeError{Scope: s}
}

// Usable tells whether the key may authenticate at time now.
func (k *APIKey) Usable(now time.Time) bool {
	if k.RevokedAt != nil {
		return false
	}
	return k.ExpiresAt == nil || now.Before(*k.ExpiresAt)
}

// Page is the list envelope of spec section 2.1.
type Page[T any] struct {
	Items []T `json:"items"`
	Page  int `json:"page"`
	Size  int `json:"size"`
	Total int `json:"total"`
}

// PageRequest is a validated page and size.
type PageRequest struct {
	Page int
	Size int
}

// Offset is the number of items before this page. A page so far out that
// the product overflows lies past every list, so it saturates instead of
// wrapping to a negative offset.
func (p PageRequest) Offset() int {
	if p.Size > 0 && p.Page-1 > math.MaxInt/p.Size {
		return math.MaxInt
	}
	return (p.Page - 1) * p.Size
}

// NewID returns an identifier with a readable type prefix and 24 hex
// digits: the creation time in unix milliseconds (12 digits), then 48
// random bits. Ids made later sort later, so a table keyed by them grows at
// the right edge of its primary key: with wholly random keys, every insert
// into a table of a million rows read and dirtied a page of its own, which
// SQLite's commits and PostgreSQL's WAL (a full page image on the first
// change of a page after each checkpoint) paid for. Clients see an opaque
// string as before.
func NewID(prefix string) string { return newIDAt(prefix, time.Now()) }

func newIDAt(prefix string, t time.Time) string {
	var b [12]byte
	binary.BigEndian.PutUint64(b[:8], uint64(t.UnixMilli())<<16)
	if _, err := rand.Read(b[6:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return prefix + "_" + hex.EncodeToString(b[:])
}

// NewDeliveryID returns a webhook delivery's id: 32 hex digits (spec
// section 6.4), the creation time in unix milliseconds (12 digits) then 80
// random bits, for the reason NewID gives: deliveries and their attempts
// are keyed by it, and with wholly random ids every closing burst and every
// recorded attempt dirtied a primary-key page of its own, which each
// SQLite commit wrote out again.
func NewDeliveryID() string { return newDeliveryIDAt(time.Now()) }

func newDeliveryIDAt(t time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(t.UnixMilli())<<16)
	if _, err := rand.Read(b[6:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return hex.EncodeToString(b[:])
}

// RandomHex returns n random bytes as lowercase hex.
func RandomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return hex.EncodeToString(b)
}

// FromMillis converts stored unix milliseconds to a UTC time.
func FromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
