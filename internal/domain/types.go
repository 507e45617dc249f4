package domain

import (
	"crypto/rand"
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

// NewID returns a random identifier with a readable type prefix.
func NewID(prefix string) string {
	return prefix + "_" + RandomHex(12)
}

// RandomHex returns n random bytes as lowercase hex.
func RandomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return hex.EncodeToString(b)
}

// Millis converts a time to the unix milliseconds the stores keep.
func Millis(t time.Time) int64 { return t.UnixMilli() }

// FromMillis converts stored unix milliseconds to a UTC time.
func FromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
