package service

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

// KeyRequest describes a key to mint.
type KeyRequest struct {
	AccountID string
	Scopes    []domain.Scope
	Name      *string
	ExpiresIn time.Duration // zero: never expires
	RateLimit *int          // per minute; nil: the server default
}

// NewKey builds a key and its secret; only the hash goes to the store. The
// key reads pds_<8 prefix chars>_<secret>: the prefix identifies it in logs
// and lists without revealing it.
func NewKey(req KeyRequest, now time.Time) (domain.APIKey, string, error) {
	if len(req.Scopes) == 0 {
		return domain.APIKey{}, "", fmt.Errorf("a key needs at least one scope")
	}
	if req.ExpiresIn < 0 {
		return domain.APIKey{}, "", fmt.Errorf("expires-in must be positive")
	}
	if req.RateLimit != nil && *req.RateLimit < 1 {
		return domain.APIKey{}, "", fmt.Errorf("rate limit must be at least 1 request per minute")
	}
	prefix := "pds_" + randomAlnum(8)
	full := prefix + "_" + randomAlnum(40)
	sum := sha256.Sum256([]byte(full))
	k := domain.APIKey{
		ID:        domain.NewID("key"),
		AccountID: req.AccountID,
		Name:      req.Name,
		Prefix:    prefix,
		LastFour:  full[len(full)-4:],
		Hash:      sum[:],
		Scopes:    req.Scopes,
		RateLimit: req.RateLimit,
		CreatedAt: now,
	}
	if req.ExpiresIn > 0 {
		exp := now.Add(req.ExpiresIn)
		k.ExpiresAt = &exp
	}
	return k, full, nil
}

// KeyMinter is what minting a key needs of the store (store.Store has it).
type KeyMinter interface {
	GetAccount(ctx context.Context, id string) (*domain.Account, error)
	CreateKey(ctx context.Context, k domain.APIKey) error
}

// Bootstrapper is what the first start needs of the store (store.Store
// has it).
type Bootstrapper interface {
	Bootstrap(ctx context.Context, a domain.Account, k domain.APIKey) (bool, error)
}

// MintKey creates a key for an existing account and returns its secret, the
// only time it is ever shown.
func MintKey(ctx context.Context, st KeyMinter, req KeyRequest, now time.Time) (domain.APIKey, string, error) {
	if _, err := st.GetAccount(ctx, req.AccountID); err != nil {
		return domain.APIKey{}, "", err
	}
	k, full, err := NewKey(req, now)
	if err != nil {
		return domain.APIKey{}, "", err
	}
	if err := st.CreateKey(ctx, k); err != nil {
		return domain.APIKey{}, "", err
	}
	return k, full, nil
}

// DefaultAccountID is the id of the account made on first start.
const DefaultAccountID = "acc_default"

// Bootstrap makes account "default" and one key with every scope when the
// database is empty. It returns the key's secret, or "" when nothing was made.
func Bootstrap(ctx context.Context, st Bootstrapper, now time.Time) (domain.APIKey, string, error) {
	name := "bootstrap"
	k, full, err := NewKey(KeyRequest{AccountID: DefaultAccountID, Scopes: domain.AllScopes, Name: &name}, now)
	if err != nil {
		return domain.APIKey{}, "", err
	}
	made, err := st.Bootstrap(ctx, domain.Account{ID: DefaultAccountID, Name: "default", CreatedAt: now}, k)
	if err != nil || !made {
		return domain.APIKey{}, "", err
	}
	return k, full, nil
}

const alnum = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"

// randomAlnum returns n characters drawn uniformly from alnum.
func randomAlnum(n int) string {
	out := make([]byte, n)
	buf := make([]byte, n*2)
	i := 0
	for i < n {
		if _, err := rand.Read(buf); err != nil {
			panic(err)
		}
		for _, b := range buf {
			// 62*4 = 248: reject the top bytes so every character is equally likely.
			if b >= 248 || i == n {
				continue
			}
			out[i] = alnum[b%62]
			i++
		}
	}
	return string(out)
}
