package service

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

// touchEvery bounds how often last_used_at is written, so that reads do not
// each cost a write.
const touchEvery = time.Minute

// Keys is what checking a key needs of the store (store.Store has it):
// declared here, so that the rules need not import the store they rule.
type Keys interface {
	KeyByHash(ctx context.Context, hash []byte) (*domain.APIKey, error)
	TouchKey(ctx context.Context, keyID string, at time.Time) error
	Classify(err error) error
}

// Authenticate finds the key whose secret a caller presents and checks that
// it may act now (spec section 5). The API's bearer header and the
// console's sign-in both come here, so a key one face refuses the other
// refuses too.
func Authenticate(ctx context.Context, st Keys, secret string, now time.Time) (*domain.APIKey, error) {
	sum := sha256.Sum256([]byte(secret))
	return ActiveKey(ctx, st, sum[:], now)
}

// ActiveKey finds a key by the SHA-256 of its secret and checks that it may
// act now: known, not revoked, not expired; a refusal is a
// *domain.UnauthorizedError saying which. The key is found through a unique
// index on the hash, so the lookup only ever compares hashes, which tell an
// attacker nothing about a secret; the found hash is compared once more in
// constant time so that no comparison of key material depends on the
// database's string comparison. It records the key's use, at most once a
// minute. A console session names its key by this hash and comes here on
// every page, so a revoked or expired key ends it on the next one.
func ActiveKey(ctx context.Context, st Keys, hash []byte, now time.Time) (*domain.APIKey, error) {
	key, err := st.KeyByHash(ctx, hash)
	if errors.Is(err, domain.ErrNotFound) || (err == nil && subtle.ConstantTimeCompare(key.Hash, hash) != 1) {
		return nil, &domain.UnauthorizedError{Detail: "The API key is not valid."}
	}
	if err != nil {
		return nil, err
	}
	if key.RevokedAt != nil {
		return nil, &domain.UnauthorizedError{Detail: "The API key has been revoked."}
	}
	if !key.Usable(now) {
		return nil, &domain.UnauthorizedError{Detail: "The API key has expired."}
	}
	if key.LastUsedAt == nil || now.Sub(*key.LastUsedAt) >= touchEvery {
		err := st.TouchKey(ctx, key.ID, now)
		var ue *domain.UnavailableError
		switch {
		case err == nil:
			key.LastUsedAt = &now
		case !errors.As(st.Classify(err), &ue) || ue.Cause != domain.CauseDiskFull:
			return nil, err
		}
		// last_used_at is a hint: a full disk keeps it from moving, and
		// must not keep a key from reading.
	}
	return key, nil
}
