package domain

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strconv"
	"time"
)

// Custom field values are stored as strings. This file is the one place that
// says which JSON values each data_type accepts, how each is stored, and how
// a stored value is coerced back for the deprecated custom_data view.
//
//	str, unicode  a JSON string, stored as is
//	int           an integer number or a string holding one (decimal, no
//	              fraction or exponent, within 64 bits), stored in decimal: 5 -> "5"
//	float, money  a number or a string holding a JSON number, stored as written: 19.90 -> "19.90"
//	bool          true/false or the strings "true"/"false", stored as "true"/"false"
//	list          an array of strings, stored as its compact JSON text: ["a","b"] -> "[\"a\",\"b\"]"
//	date          a string: an RFC 3339 date ("2026-11-21", stored as is) or
//	              date-time (stored in UTC with milliseconds, "2026-11-21T10:15:30.000Z")

var (
	integerText = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)
	numberText  = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)
)

const dateLayout = "2006-01-02"

// StoreCustomValue checks a JSON value against a data_type and returns the
// string to store, or an error saying why the value does not fit.
func StoreCustomValue(dataType string, raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	var s string
	isString := len(raw) > 0 && raw[0] == '"'
	if isString {
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", errors.New("is not a valid JSON string")
		}
	}
	switch dataType {
	case "int":
		text := string(raw)
		if isString {
			text = s
		}
		if !integerText.MatchString(text) {
			return "", errors.New("must be an integer (a number without fraction, or a string holding one)")
		}
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return "", errors.New("is outside the 64-bit integer range")
		}
		return strconv.FormatInt(n, 10), nil
	case "float", "money":
		text := string(raw)
		if isString {
			text = s
		}
		if !numberText.MatchString(text) {
			return "", errors.New("must be a number (or a string holding one, such as \"19.90\")")
		}
		if _, err := strconv.ParseFloat(text, 64); err != nil {
			return "", errors.New("is outside the range of a 64-bit float")
		}
		return text, nil
	case "bool":
		switch {
		case string(raw) == "true", isString && s == "true":
			return "true", nil
		case string(raw) == "false", isString && s == "false":
			return "false", nil
		}
		return "", errors.New(`must be true or false (or the strings "true" or "false")`)
	case "list":
		// Pointers tell a null item, which would decode as "", from a string.
		var held []*string
		if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &held) != nil || slices.Contains(held, nil) {
			return "", errors.New("must be an array of strings")
		}
		items := make([]string, len(held))
		for i, s := range held {
			items[i] = *s
		}
		b, _ := json.Marshal(items)
		return string(b), nil
	case "date":
		if !isString {
			return "", errors.New("must be a string holding an RFC 3339 date (2026-11-21) or date-time")
		}
		if _, err := time.Parse(dateLayout, s); err == nil {
			return s, nil
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil || !FitsRFC3339(t) {
			return "", errors.New("must be an RFC 3339 date (2026-11-21) or date-time (2026-11-21T10:15:30Z) of the years 0000 to 9999 in UTC")
		}
		return t.UTC().Format(TimeLayout), nil
	default: // str, unicode
		if !isString {
			return "", errors.New("must be a string")
		}
		return s, nil
	}
}

// FitsRFC3339 tells whether t, shown in UTC, has a four-digit year, as RFC
// 3339 requires: an offset can push 9999-12-31 into year 10000 or 0000-01-01
// into year -1, which no response may carry.
func FitsRFC3339(t time.Time) bool {
	y := t.UTC().Year()
	return y >= 0 && y <= 9999
}

// CoerceCustomValue turns a stored value into the typed value custom_data
// shows: numbers for int, float and money, a boolean for bool, an array for
// list, the string otherwise. A stored value that does not parse is shown as
// its string rather than lost.
func CoerceCustomValue(dataType, stored string) any {
	switch dataType {
	case "int":
		if integerText.MatchString(stored) {
			return json.Number(stored)
		}
	case "float", "money":
		if numberText.MatchString(stored) {
			return json.Number(stored)
		}
	case "bool":
		return stored == "true"
	case "list":
		var items []string
		if json.Unmarshal([]byte(stored), &items) == nil && items != nil {
			return items
		}
	}
	return stored
}

// CustomPlaceholder is what custom_data shows for a field the person holds
// no value for: "", 0, false, [], and for a date the render time itself.
func CustomPlaceholder(dataType string, now time.Time) any {
	switch dataType {
	case "int", "float", "money":
		return 0
	case "bool":
		return false
	case "list":
		return []string{}
	case "date":
		return T(now)
	}
	return ""
}
