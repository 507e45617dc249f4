package postgres

import (
	"errors"
	"fmt"
	neturl "net/url"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// parseURL reads a connection URL strictly. pgx reads its query string
// through url.URL.Query, which drops a pair it cannot parse, and with it a
// setting the operator wrote (sslmode=verify-full would quietly become the
// default): such a URL is refused instead. The error never quotes the URL,
// which may hold a password.
func parseURL(raw string) (*neturl.URL, neturl.Values, error) {
	u, err := neturl.Parse(raw)
	if err != nil {
		var ue *neturl.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, nil, fmt.Errorf("postgres: the database URL does not parse: %w", err)
	}
	q, err := neturl.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, nil, fmt.Errorf("postgres: the database URL's query string does not parse: %w", err)
	}
	return u, q, nil
}

// WithSetting returns the connection URL raw with its query parameter name
// set to value, the other parameters kept. pgx sends a parameter it does
// not know to the server as a setting of the session (search_path,
// synchronous_commit).
func WithSetting(raw, name, value string) (string, error) {
	u, q, err := parseURL(raw)
	if err != nil {
		return "", err
	}
	q.Set(name, value)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// withDefault is WithSetting for a parameter the URL does not set already.
func withDefault(raw, name, value string) (string, error) {
	_, q, err := parseURL(raw)
	if err != nil || q.Has(name) {
		return raw, err
	}
	return WithSetting(raw, name, value)
}

// CheckURL reports what is wrong with a connection URL without
// connecting: one that does not parse, or that pgx cannot read (a port
// that is not a number, an unknown sslmode).
func CheckURL(raw string) error {
	if _, _, err := parseURL(raw); err != nil {
		return err
	}
	if _, err := pgconn.ParseConfig(raw); err != nil {
		// pgx quotes the URL (its password masked) ahead of the reason; the
		// caller names the setting itself.
		msg := err.Error()
		if _, reason, ok := strings.Cut(msg, "`: "); ok {
			msg = reason
		}
		return errors.New("postgres: " + msg)
	}
	return nil
}
