package client

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"strconv"
	"time"
)

// FollowChanges follows the account's change feed (GET /persons/changes)
// from cursor ("" for the beginning of what the feed holds, or an export's
// Pds-Changes-Cursor header): every person whose state changed after it, once
// per change, in feed order, each entry's Cursor where to resume. When it
// has read everything it waits for more, wait seconds a read (1 to 30), so
// it ends only when ctx does or on an error, which it yields last. An
// outage (503) or a spent budget (429) is waited out as the server asks; a
// cursor too old (410) ends it: export again and follow from the export's
// cursor.
//
//	for change, err := range c.FollowChanges(ctx, cursor, 30) {
//		if err != nil {
//			return err
//		}
//		sync(change) // change.Person, or change.Deleted for a tombstone
//		cursor = change.Cursor
//	}
func (c *ClientWithResponses) FollowChanges(ctx context.Context, cursor string, wait int) iter.Seq2[PersonChange, error] {
	return func(yield func(PersonChange, error) bool) {
		params := ListPersonChangesParams{Wait: &wait}
		for ctx.Err() == nil {
			params.After = nil
			if cursor != "" {
				params.After = &cursor
			}
			res, err := c.ListPersonChangesWithResponse(ctx, &params)
			if err != nil {
				if ctx.Err() == nil {
					yield(PersonChange{}, err)
				}
				return
			}
			if pause, ok := retryAfter(res.HTTPResponse); ok {
				select {
				case <-ctx.Done():
				case <-time.After(pause):
				}
				continue
			}
			if res.JSON200 == nil {
				yield(PersonChange{}, fmt.Errorf("client: list person changes: %s: %s", res.Status(), res.Body))
				return
			}
			for _, change := range res.JSON200.Items {
				if !yield(change, nil) {
					return
				}
			}
			cursor = res.JSON200.Next
		}
	}
}

// retryAfter says how long to wait before sending a request again that the
// server refused for now: an outage (503) or a spent budget (429).
func retryAfter(res *http.Response) (time.Duration, bool) {
	if res == nil || (res.StatusCode != http.StatusServiceUnavailable && res.StatusCode != http.StatusTooManyRequests) {
		return 0, false
	}
	secs, err := strconv.Atoi(res.Header.Get("Retry-After"))
	if err != nil || secs < 0 {
		secs = 1
	}
	return time.Duration(secs) * time.Second, true
}
