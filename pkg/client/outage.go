package client

import (
	"net/http"
	"strconv"
	"time"
)

// Outage reports whether res is the server's refusal for an outage of its
// database (a 503 with Retry-After: unreachable, too slow to answer, or out
// of disk; the problem's Cause says which), and how long to wait before
// sending the same request again. Nothing was changed unless a later read
// shows it, so an upsert with the same external_id, or a breadcrumb with the
// same Idempotency-Key, is safe to send again. Any other answer, a 500
// included, is not an outage: a 500 is a defect of the server.
//
//	res, err := c.UpsertPersonWithResponse(ctx, body)
//	if wait, ok := client.Outage(res.HTTPResponse); ok {
//		time.Sleep(wait) // then send it again
//	}
func Outage(res *http.Response) (wait time.Duration, ok bool) {
	if res == nil || res.StatusCode != http.StatusServiceUnavailable {
		return 0, false
	}
	secs, err := strconv.Atoi(res.Header.Get("Retry-After"))
	if err != nil || secs < 0 {
		return 0, false
	}
	return time.Duration(secs) * time.Second, true
}
