package console

import (
	"net/http"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/ratelimit"
	"github.com/pds-dev/pds/internal/store"
)

type overviewView struct {
	Account *domain.Account
	Key     *domain.APIKey
	Budget  ratelimit.Decision
	Counts  domain.AccountCounts
	// PendingAtBound says the pending deliveries were counted only up to
	// store.PendingBound.
	PendingAtBound bool
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
	counts, err := s.store.AccountCounts(ctx, v.key.AccountID)
	if err != nil {
		return err
	}
	s.render(w, r, v, http.StatusOK, "overview", "Overview", overviewView{Account: acc, Key: v.key, Budget: budget,
		Counts: counts, PendingAtBound: counts.PendingDeliveries >= store.PendingBound})
	return nil
}
