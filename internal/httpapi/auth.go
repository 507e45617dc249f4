package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
)

// authFace names the API in the failed-authentication metrics.
const authFace = "api"

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

// authenticate checks the bearer key (service.Authenticate decides). An
// address that has failed too often this minute is refused before its key
// is read (serving.Settings.AuthFailures); every attempt counts against it
// until its key turns out good, so that simultaneous attempts cannot pass
// the check together.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (*principal, bool) {
	now := s.now()
	attempt, d := s.cfg.AuthFailures.Begin(authFace, s.cfg.ClientAddress(r), now)
	if !d.Allowed {
		w.Header().Set("Retry-After", strconv.Itoa(d.ResetIn(now)))
		writeProblem(w, r, newProblem(http.StatusTooManyRequests, d.ThrottledRefusal(now)))
		return nil, false
	}
	defer attempt.Succeeded()
	fail := func(detail string) (*principal, bool) {
		attempt.Failed()
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
	key, err := service.Authenticate(r.Context(), s.store, secret, now)
	var ue *domain.UnauthorizedError
	if errors.As(err, &ue) {
		return fail(ue.Detail)
	}
	if err != nil {
		s.writeError(w, r, err)
		return nil, false
	}
	if who, _ := r.Context().Value(callerKey{}).(*caller); who != nil {
		who.accountID, who.keyID = key.AccountID, key.ID
	}
	return &principal{key: key}, true
}
