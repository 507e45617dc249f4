package httpapi

import (
	"net/http"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/ratelimit"
)

type rateLimitView struct {
	Limit         int         `json:"limit"`
	Remaining     int         `json:"remaining"`
	WindowSeconds int         `json:"window_seconds"`
	ResetAt       domain.Time `json:"reset_at"`
}

type whoamiView struct {
	AccountID   string         `json:"account_id"`
	KeyID       string         `json:"key_id"`
	Scopes      []domain.Scope `json:"scopes"`
	Prefix      string         `json:"prefix"`
	LastFour    string         `json:"last_four"`
	ServiceName *string        `json:"service_name"`
	ExpiresAt   *domain.Time   `json:"expires_at"`
	LastUsedAt  *domain.Time   `json:"last_used_at"`
	Revoked     bool           `json:"revoked"`
	RateLimit   rateLimitView  `json:"rate_limit"`
}

// whoami introspects the calling key; it is not counted against the limit.
func (s *Server) whoami(w http.ResponseWriter, r *http.Request) error {
	k := principalOf(r.Context()).key
	now := s.now()
	d, err := s.limiter.Peek(r.Context(), k.ID, s.keyLimit(principalOf(r.Context())), now)
	if err != nil {
		return err
	}
	scopes := k.Scopes
	if scopes == nil {
		scopes = []domain.Scope{}
	}
	return writeJSON(w, http.StatusOK, whoamiView{
		AccountID:   k.AccountID,
		KeyID:       k.ID,
		Scopes:      scopes,
		Prefix:      k.Prefix,
		LastFour:    k.LastFour,
		ServiceName: k.Name,
		ExpiresAt:   domain.TP(k.ExpiresAt),
		LastUsedAt:  domain.TP(k.LastUsedAt),
		Revoked:     k.RevokedAt != nil,
		RateLimit: rateLimitView{
			Limit:         d.Limit,
			Remaining:     d.Remaining,
			WindowSeconds: int(ratelimit.Window.Seconds()),
			ResetAt:       domain.T(d.Reset),
		},
	})
}
