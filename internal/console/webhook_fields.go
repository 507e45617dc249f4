package console

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/webhook"
)

// The subscription fields of issue 67 as the console's forms take them,
// decided as the API decides them (webhook.Settings.CheckSubscription).

// formHeaders reads the headers textarea: one "Name: value" a line, blank
// lines skipped. Empty is nil (on the edit form: leave them as they are);
// a line without a colon is refused, naming the field.
func formHeaders(form url.Values) (map[string]string, error) {
	text := strings.TrimSpace(form.Get("headers"))
	if text == "" {
		return nil, nil
	}
	out := map[string]string{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return nil, domain.BodyError("/headers", "line %d of headers has no colon: write one Name: value a line.", i+1)
		}
		out[strings.TrimSpace(name)] = strings.TrimSpace(value)
	}
	return out, nil
}

// formRate reads max_per_second: empty is nil (unchanged; none on create),
// 0 removes the bound.
func formRate(form url.Values) (*int, error) {
	text := strings.TrimSpace(form.Get("max_per_second"))
	if text == "" {
		return nil, nil
	}
	n, err := strconv.Atoi(text)
	if err != nil {
		return nil, domain.BodyError("/max_per_second", "max_per_second is %q; it is a whole number, 1 to %d, or 0 for no bound.",
			text, webhook.MaxPerSecondLimit)
	}
	return &n, nil
}

// deliveryChanges is the changes member of a delivery's body, for a key
// that may read the body; nil when it has none.
func deliveryChanges(body []byte) []string {
	var b struct {
		Changes *[]string `json:"changes"`
	}
	if json.NewDecoder(bytes.NewReader(body)).Decode(&b) != nil || b.Changes == nil {
		return nil
	}
	if *b.Changes == nil {
		return []string{}
	}
	return *b.Changes
}
