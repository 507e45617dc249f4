package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

type principalKey struct{}

// principal is the authenticated caller.
type principal struct {
	key *domain.APIKey
}

func principalOf(ctx context.Context) *principal {
	p, _ := ctx.Value(principalKey{}).(*principal)
	return p
}

// accountID is the caller's account; every handler scopes its work by it.
func accountID(r *http.Request) string { return principalOf(r.Context()).key.AccountID }

// touchEvery bounds how often last_used_at is written, so that reads do not
// each cost a write.
const touchEvery = time.Minute

// authenticate checks the bearer key. The key is found by the SHA-256 of its
// secret through a unique index, so the lookup only ever compares hashes,
// which tell an attacker nothing about a secret; the found hash is compared
// once more in constant time so that no comparison of key material depends
// on the database's string comparison.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (*principal, bool) {
	fail := func(detail string) (*principal, bool) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="pds"`)
		writeProblem(w, r, newProblem(http.StatusUnauthorized, detail))
		return nil, false
	}
	h := r.Header.Get("Authorization")
	if h == "" {
		return fail("The request has no Authorization header; send Authorization: Bearer <API key>.")
	}
	scheme, secret, ok := strings.Cut(h, " ")
	secret = strings.TrimSpace(secret)
	if !ok || !strings.EqualFold(scheme, "Bearer") || secret == "" || strings.ContainsAny(secret, " \t") {
		return fail("The Authorization header is malformed; send Authorization: Bearer <API key>.")
	}
	sum := sha256.Sum256([]byte(secret))
	key, err := s.store.KeyByHash(r.Context(), sum[:])
	if errors.Is(err, domain.ErrNotFound) || (err == nil && subtle.ConstantTimeCompare(key.Hash, sum[:]) != 1) {
		return fail("The API key is not valid.")
	}
	if err != nil {
		s.writeError(w, r, err)
		return nil, false
	}
	now := s.now()
	if key.RevokedAt != nil {
		return fail("The API key has been revoked.")
	}
	if !key.Usable(now) {
		return fail("The API key has expired.")
	}
	if key.LastUsedAt == nil || now.Sub(*key.LastUsedAt) >= touchEvery {
		err := s.store.TouchKey(r.Context(), key.ID, now)
		switch {
		case err == nil:
			key.LastUsedAt = &now
		case !diskFull(s.store.Classify(err)):
			s.writeError(w, r, err)
			return nil, false
		}
		// last_used_at is a hint: a full disk keeps it from moving, and
		// must not keep a key from reading.
	}
	if who, _ := r.Context().Value(callerKey{}).(*caller); who != nil {
		who.accountID, who.keyID = key.AccountID, key.ID
	}
	return &principal{key: key}, true
}

// diskFull reports whether err is a refusal for a full disk.
func diskFull(err error) bool {
	var ue *domain.UnavailableError
	return errors.As(err, &ue) && ue.Cause == domain.CauseDiskFull
}
