package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/ratelimit"
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
// is read (serving.Settings.AuthFailures); a failure is counted and checked
// at once, so that of attempts that passed the check together no more than
// the budget are answered 401.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (*principal, bool) {
	addr, now := s.cfg.ClientAddress(r), s.now()
	throttled := func(d ratelimit.Decision) (*principal, bool) {
		w.Header().Set("Retry-After", strconv.Itoa(d.ResetIn(now)))
		writeProblem(w, r, newProblem(http.StatusTooManyRequests, d.ThrottledRefusal(now)))
		return nil, false
	}
	if d := s.cfg.AuthFailures.Check(authFace, addr, now); !d.Allowed {
		return throttled(d)
	}
	fail := func(detail string) (*principal, bool) {
		if d := s.cfg.AuthFailures.Failed(authFace, addr, now); !d.Allowed {
			return throttled(d) // others failed from the address meanwhile
		}
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
