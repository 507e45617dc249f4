package service

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/pds-dev/pds/internal/domain"
)

// FieldDef is what checking a value needs of a live Person custom field.
type FieldDef struct{ ID, DataType string }

// ValueChange sets (Value) or removes (nil) the value of one custom field;
// with ClearAll, every live Person value of the person goes first.
type ValueChange struct {
	FieldID  string
	Key      string // the field's public key
	Value    *string
	ClearAll bool
}

// CustomValueChanges checks the custom_fields of a person write against
// the live Person fields of the account, keyed by public key (decisions.md
// section 4): every key must name one, so an unknown or archived key is a
// 400, and every value must fit its data_type. A null value removes that
// key, a null object removes every value. All bad keys are reported
// together, each at /custom_fields/<key>.
func CustomValueChanges(in domain.Opt[map[string]json.RawMessage], live map[string]FieldDef) ([]ValueChange, error) {
	if in.Null {
		return []ValueChange{{ClearAll: true}}, nil
	}
	if len(in.Value) == 0 {
		return nil, nil
	}
	keys := make([]string, 0, len(in.Value))
	for k := range in.Value {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []ValueChange
	var bad []domain.FieldError
	for _, k := range keys {
		ptr := "/custom_fields/" + escapePointer(k)
		f, ok := live[k]
		if !ok {
			bad = append(bad, domain.FieldError{Pointer: ptr,
				Detail: fmt.Sprintf("custom field %q is not a Person custom field of this account (unknown or archived).", k)})
			continue
		}
		raw := in.Value[k]
		if strings.TrimSpace(string(raw)) == "null" {
			out = append(out, ValueChange{FieldID: f.ID, Key: k})
			continue
		}
		v, err := domain.StoreCustomValue(f.DataType, raw)
		if err != nil {
			bad = append(bad, domain.FieldError{Pointer: ptr,
				Detail: fmt.Sprintf("custom field %q (%s) %s.", k, f.DataType, err)})
			continue
		}
		out = append(out, ValueChange{FieldID: f.ID, Key: k, Value: &v})
	}
	if len(bad) > 0 {
		return nil, domain.Invalid(bad...)
	}
	return out, nil
}

// escapePointer escapes a key as a JSON pointer token (RFC 6901).
func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}
