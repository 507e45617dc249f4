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
	b := append(make([]byte, 0, len(TimeLayout)+2), '"')
	return append(AppendTime(b, t.Time), '"'), nil
}

// AppendTime appends t in TimeLayout, as t.UTC().AppendFormat(dst,
// TimeLayout) does, without the layout's parsing: every person written out
// has two times, and interpreting the layout for each was a noticeable part
// of encoding a compact person. A year outside 0-9999 is left to
// AppendFormat.
func AppendTime(dst []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(dst, TimeLayout)
	}
	hour, minute, second := t.Clock()
	milli := t.Nanosecond() / 1e6
	return append(dst,
		byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), '-',
		byte('0'+int(month)/10), byte('0'+int(month)%10), '-', byte('0'+day/10), byte('0'+day%10), 'T',
		byte('0'+hour/10), byte('0'+hour%10), ':', byte('0'+minute/10), byte('0'+minute%10), ':',
		byte('0'+second/10), byte('0'+second%10), '.',
		byte('0'+milli/100), byte('0'+milli/10%10), byte('0'+milli%10), 'Z')
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
