package domain

import (
	"encoding/json"
	"time"
)

// TimeLayout is how every time appears in a response: RFC 3339, UTC, "Z",
// millisecond precision.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// Time is a time.Time that marshals in TimeLayout.
type Time struct{ time.Time }

// T wraps t.
func T(t time.Time) Time { return Time{t.UTC()} }

// TP wraps an optional time.
func TP(t *time.Time) *Time {
	if t == nil {
		return nil
	}
	v := T(*t)
	return &v
}

// MarshalJSON writes TimeLayout.
func (t Time) MarshalJSON() ([]byte, error) {
	return json.Marshal(t.UTC().Format(TimeLayout))
}

// UnmarshalJSON reads any RFC 3339 time.
func (t *Time) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return err
	}
	t.Time = v.UTC()
	return nil
}
