package console

import (
	"net/http"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/ratelimit"
)

type overviewView struct {
	Account *domain.Account
	Key     *domain.APIKey
	Budget  ratelimit.Decision
	Counts  any
}

// overview shows the account, the key the session acts as with its scopes
// and rate budget (as GET /me does), and what the account holds.
func (s *Server) overview(w http.ResponseWriter, r *http.Request, v *viewer) error {
	ctx := r.Context()
	acc, err := s.store.GetAccount(ctx, v.key.AccountID)
	if err != nil {
		return err
	}
	budget, err := s.limiter.Peek(ctx, v.key.ID, v.key.LimitOr(s.cfg.RateLimit), s.now())
	if err != nil {
		return err
	}
	s.render(w, r, v, http.StatusOK, "overview", "Overview", overviewView{Account: acc, Key: v.key, Budget: budget})
	return nil
}
