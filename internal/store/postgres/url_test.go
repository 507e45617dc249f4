package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/pds-dev/pds/internal/store/postgres"
	"github.com/pds-dev/pds/internal/testenv"
)

func TestWithSetting(t *testing.T) {
	for _, tc := range []struct {
		name, url, want string
	}{
		{"added", "postgres://u@db:5432/app", "postgres://u@db:5432/app?search_path=s1"},
		{"the others kept", "postgres://u@db/app?sslmode=verify-full&application_name=pds",
			"postgres://u@db/app?application_name=pds&search_path=s1&sslmode=verify-full"},
		{"replaced", "postgres://u@db/app?search_path=old", "postgres://u@db/app?search_path=s1"},
	} {
		got, err := postgres.WithSetting(tc.url, "search_path", "s1")
		if err != nil || got != tc.want {
			t.Errorf("%s: WithSetting(%q) = %q, %v; want %q", tc.name, tc.url, got, err, tc.want)
		}
	}
}

// TestMalformedURLRefused: a query string pgx would read with a pair
// dropped is refused before any connection is made, though the rest of the
// URL names a live database, and the error does not quote the password.
func TestMalformedURLRefused(t *testing.T) {
	ctx := context.Background()
	// Trust authentication ignores the password; the errors must not show it.
	live := strings.Replace(testenv.Postgres.NewDatabase(t), "://postgres@", "://postgres:s3cret@", 1)
	for _, bad := range []string{"sslmode=verify%ZZfull", "application_name=pds;sslmode=disable"} {
		raw := live + "&" + bad
		_, err := postgres.WithSetting(raw, "search_path", "s1")
		check(t, "WithSetting", raw, err)
		st, err := postgres.Open(ctx, raw, postgres.Options{})
		if err == nil {
			st.Close()
		}
		check(t, "Open", raw, err)
		check(t, "Migrate", raw, postgres.Migrate(ctx, raw))
	}
	_, err := postgres.WithSetting("postgres://u:s3cret@db/app\x7f", "search_path", "s1")
	check(t, "WithSetting", "a URL with a control character", err)
}

func check(t *testing.T, what, raw string, err error) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), "does not parse") {
		t.Errorf("%s(%q) = %v, want the URL refused as not parsing", what, raw, err)
	}
	if err != nil && strings.Contains(err.Error(), "s3cret") {
		t.Errorf("%s: the error quotes the password: %v", what, err)
	}
}
