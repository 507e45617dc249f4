package httpapi

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/pds-dev/pds/internal/ratelimit"
)

// keyLimit is the key's own per-minute limit or the server default.
func (s *Server) keyLimit(p *principal) int { return p.key.LimitOr(s.cfg.RateLimit) }

// rateLimit counts the request and writes the RateLimit headers
// (draft-ietf-httpapi-ratelimit-headers); over the budget it answers 429.
func (s *Server) rateLimit(w http.ResponseWriter, r *http.Request, p *principal) bool {
	now := s.now()
	d, err := s.limiter.Allow(r.Context(), p.key.ID, s.keyLimit(p), now)
	if err != nil {
		s.writeError(w, r, err)
		return false
	}
	reset := d.ResetIn(now)
	w.Header().Set("RateLimit-Policy", fmt.Sprintf(`"per-key";q=%d;w=%d`, d.Limit, int(ratelimit.Window.Seconds())))
	w.Header().Set("RateLimit", fmt.Sprintf(`"per-key";r=%d;t=%d`, d.Remaining, reset))
	if !d.Allowed {
		if s.cfg.Metrics != nil {
			s.cfg.Metrics.RateLimited()
		}
		w.Header().Set("Retry-After", strconv.Itoa(reset))
		writeProblem(w, r, newProblem(http.StatusTooManyRequests, d.Refusal(now)))
		return false
	}
	return true
}
