package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// Decide turns what one attempt got (a status code, or an error when no
// response came) into what happens next (decisions.md section 8):
//
//   - 2xx succeeds;
//   - a timeout, a connection error or a 5xx is retried per the schedule,
//     and fails once the schedule is used up;
//   - any 3xx or 4xx (408 and 429 included) fails without a retry, and 410
//     also retires the subscription;
//   - a failed delivery extends the subscription's failure streak, which
//     deactivates it once it spans DisableAfter and holds two deliveries.
func (s Settings) Decide(d domain.Delivery, code int, attemptErr error, at time.Time) store.AttemptResult {
	s = s.WithDefaults()
	r := store.AttemptResult{
		Attempt: domain.DeliveryAttempt{AttemptedAt: at},
		Deactivate: func(start time.Time, failures int) bool {
			return failures >= 2 && at.Sub(start) >= s.DisableAfter
		},
	}
	fail := func(msg string) store.AttemptResult {
		r.Status, r.Error = domain.DeliveryFailed, &msg
		return r
	}
	if attemptErr == nil {
		r.Attempt.StatusCode = &code
	}
	switch {
	case attemptErr == nil && code >= 200 && code < 300:
		r.Status = domain.DeliverySucceeded
		return r
	case attemptErr == nil && code == http.StatusGone:
		r.Gone = true
		return fail("HTTP 410 Gone: the subscription was retired")
	case attemptErr == nil && code >= 300 && code < 400:
		return fail(fmt.Sprintf("HTTP %d %s: redirects are not followed; not retried", code, http.StatusText(code)))
	case attemptErr == nil && code < 500:
		return fail(fmt.Sprintf("HTTP %d %s: not retried", code, http.StatusText(code)))
	}
	msg := describe(code, attemptErr, s.Timeout)
	if attemptErr != nil {
		r.Attempt.Error = &msg
	}
	next := d.RoundAttempts() + 1 // the index of the next attempt in the schedule
	if next >= len(s.Schedule) {
		return fail(fmt.Sprintf("%s; gave up after %d attempts", msg, len(s.Schedule)))
	}
	due := at.Add(s.Jitter(s.Schedule[next]))
	r.Status, r.Error, r.NextAttemptAt = domain.DeliveryPending, &msg, &due
	return r
}

// describe says what went wrong with an attempt worth retrying.
func describe(code int, err error, timeout time.Duration) string {
	if err == nil {
		return fmt.Sprintf("HTTP %d %s", code, http.StatusText(code))
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return fmt.Sprintf("timeout: no complete response within %s", timeout)
	}
	return "connection failed: " + *errorText(err)
}

// errorText is an attempt's error without the URL the client repeats.
func errorText(err error) *string {
	if err == nil {
		return nil
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	s := err.Error()
	return &s
}

// LastAttemptBy is the latest time at which any of the pending deliveries
// described by rounds can make its final scheduled attempt, counting the
// most jitter can add; from, when there are none.
func (s Settings) LastAttemptBy(rounds []domain.PendingRound, from time.Time) time.Time {
	s = s.WithDefaults()
	latest := from
	for _, r := range rounds {
		t := r.NextAttemptAt
		if t.Before(from) {
			t = from
		}
		for i := r.RoundAttempts + 1; i < len(s.Schedule); i++ {
			t = t.Add(s.Schedule[i] + maxJitter(s.Schedule[i]))
		}
		if t.After(latest) {
			latest = t
		}
	}
	return latest
}

// OverlapUntil is the end of the overlap a rotation at now opens, in which
// the previous secret signs alongside the new one under Standard Webhooks.
func (s Settings) OverlapUntil(now time.Time) time.Time {
	return now.Add(s.WithDefaults().RotationOverlap)
}

// PreviousSecretExpiry is when the secret that hook's rotation at now
// retired stops signing: after the last attempt of a delivery made before
// the rotation (spec section 4, webhook rule 3) and, under Standard
// Webhooks, where both secrets sign every delivery, not before the overlap
// ends.
func (s Settings) PreviousSecretExpiry(hook *domain.Webhook, rounds []domain.PendingRound, now time.Time) time.Time {
	last := s.LastAttemptBy(rounds, now)
	if hook.SignatureScheme == domain.SchemeStandardWebhooks && hook.Previous != nil && hook.Previous.Until.After(last) {
		return hook.Previous.Until
	}
	return last
}
