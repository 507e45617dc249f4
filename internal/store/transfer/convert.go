package transfer

import (
	"fmt"
	"strings"
)

// kind is what a column holds, as far as moving it between engines goes:
// times are unix milliseconds in both (BIGINT, INTEGER), booleans are
// BOOLEAN on PostgreSQL and 0 or 1 on SQLite, bytes BYTEA and BLOB, JSON
// documents text in both.
type kind int

const (
	kindOther kind = iota
	kindText
	kindInt
	kindBool
	kindBytes
)

func (k kind) String() string {
	switch k {
	case kindText:
		return "text"
	case kindInt:
		return "integer"
	case kindBool:
		return "boolean"
	case kindBytes:
		return "bytes"
	}
	return "other"
}

// column is one column of a table, as an engine declares it.
type column struct {
	name string
	kind kind
	// decl is the engine's own name of its type, for messages.
	decl string
}

// sqliteKind reads a column's declared type on SQLite.
func sqliteKind(decl string) kind {
	switch strings.ToUpper(decl) {
	case "TEXT":
		return kindText
	case "INTEGER", "BIGINT":
		return kindInt
	case "BLOB":
		return kindBytes
	}
	return kindOther
}

// postgresKind reads a column's type (udt_name) on PostgreSQL.
func postgresKind(udt string) kind {
	switch udt {
	case "text", "varchar":
		return kindText
	case "int2", "int4", "int8":
		return kindInt
	case "bool":
		return kindBool
	case "bytea":
		return kindBytes
	}
	return kindOther
}

// convert turns a value as the source's driver gives it into the value
// the target's column takes. Anything but the conversions the two schemas
// need is refused rather than guessed at: a boolean is 0 or 1, an integer
// is an integer, text is text.
func convert(v any, to kind) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch to {
	case kindText:
		switch x := v.(type) {
		case string:
			return x, nil
		case []byte:
			return string(x), nil
		}
	case kindInt:
		switch x := v.(type) {
		case int64:
			return x, nil
		case int32:
			return int64(x), nil
		case int16:
			return int64(x), nil
		case bool:
			if x {
				return int64(1), nil
			}
			return int64(0), nil
		}
	case kindBool:
		switch x := v.(type) {
		case bool:
			return x, nil
		case int64:
			switch x {
			case 0:
				return false, nil
			case 1:
				return true, nil
			}
		case int32:
			switch x {
			case 0:
				return false, nil
			case 1:
				return true, nil
			}
		}
	case kindBytes:
		switch x := v.(type) {
		case []byte:
			return x, nil
		case string:
			return []byte(x), nil
		}
	}
	return nil, fmt.Errorf("a %T (%s) does not fit a column of %s", v, shorten(fmt.Sprint(v)), to)
}

// shorten keeps a value short enough for a message.
func shorten(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
