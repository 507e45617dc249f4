package sqlstore

import (
	"database/sql"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

// nullMillis turns an optional time (a time.Time or a domain.Time) into a
// nullable unix-millisecond value.
func nullMillis[T interface{ UnixMilli() int64 }](t *T) any {
	if t == nil {
		return nil
	}
	return (*t).UnixMilli()
}

// timePtr turns a nullable unix-millisecond column into an optional time.
func timePtr(n sql.NullInt64) *time.Time {
	if !n.Valid {
		return nil
	}
	t := domain.FromMillis(n.Int64)
	return &t
}

// strPtr turns a nullable text column into an optional string.
func strPtr(n sql.NullString) *string {
	if !n.Valid {
		return nil
	}
	s := n.String
	return &s
}

// nullable turns an optional value into a nullable one.
func nullable[T any](v *T) any {
	if v == nil {
		return nil
	}
	return *v
}
