package httpapi

import (
	"errors"
	"strings"
	"testing"

	"github.com/pds-dev/pds/internal/domain"
)

// TestInvalidJSONSaysWhere: a body that stops being JSON is refused with
// the line and column where it does.
func TestInvalidJSONSaysWhere(t *testing.T) {
	for _, c := range []struct {
		body, want string
	}{
		{`{"email": "a@example.org",}`, "line 1, column 26"},
		{"{\n  \"email\": \"a@example.org\"\n  \"phone\": \"1\"\n}", "line 3, column 3"},
		{"{\n  \"first_name\": \"Zoë\", x\n}", "line 2, column 24"},
	} {
		var dst struct {
			Email     *string `json:"email"`
			Phone     *string `json:"phone"`
			FirstName *string `json:"first_name"`
		}
		err := decodeMembers("The request body", []byte(c.body), &dst)
		var ve *domain.ValidationError
		if !errors.As(err, &ve) || !strings.Contains(ve.Detail, c.want) {
			t.Errorf("%q: %v, want a 400 at %s", c.body, err, c.want)
		}
	}
}
