package httpapi

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/pds-dev/pds/internal/ratelimit"
)

// keyLimit is the key's own per-minute limit or the server default.
func (s *Server) keyLimit(p *principal) int { return p.key.LimitOr(s.cfg.RateLimit) }

// rateLimitPolicy is the RateLimit-Policy header's value for limit;
// written with every counted answer, the usual ones made once.
func rateLimitPolicy(limit int) string {
	if v, ok := policies.Load(limit); ok {
		return v.(string)
	}
	v := fmt.Sprintf(`"per-key";q=%d;w=%d`, limit, int(ratelimit.Window.Seconds()))
	if n := policyCount.Add(1); n <= 1000 {
		policies.Store(limit, v)
	}
	return v
}

// policies holds the RateLimit-Policy values made, by limit; a few limits
// serve most keys.
var (
	policies    sync.Map
	policyCount atomic.Int64
)

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
	h := w.Header()
	h["Ratelimit-Policy"] = []string{rateLimitPolicy(d.Limit)}
	b := strconv.AppendInt(append(make([]byte, 0, 40), `"per-key";r=`...), int64(d.Remaining), 10)
	h["Ratelimit"] = []string{string(strconv.AppendInt(append(b, ";t="...), int64(reset), 10))}
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
