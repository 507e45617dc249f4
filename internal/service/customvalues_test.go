package service

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/pds-dev/pds/internal/domain"
)

func TestCustomValueChanges(t *testing.T) {
	live := map[string]FieldDef{
		"age": {ID: "cf_age", DataType: "int"}, "vip": {ID: "cf_vip", DataType: "bool"},
		"tags": {ID: "cf_tags", DataType: "list"}, "a/b~c": {ID: "cf_odd", DataType: "str"},
	}
	values := func(pairs ...string) domain.Opt[map[string]json.RawMessage] {
		m := map[string]json.RawMessage{}
		for i := 0; i < len(pairs); i += 2 {
			m[pairs[i]] = json.RawMessage(pairs[i+1])
		}
		return domain.Opt[map[string]json.RawMessage]{Set: true, Value: m}
	}
	set := func(id, v string) ValueChange {
		return ValueChange{FieldID: id, Key: strings.TrimPrefix(id, "cf_"), Value: &v}
	}
	for _, tc := range []struct {
		name     string
		in       domain.Opt[map[string]json.RawMessage]
		want     []ValueChange
		pointers []string // of the 400, when one is wanted
	}{
		{"decisions 4: absent custom_fields leaves every value", domain.Opt[map[string]json.RawMessage]{}, nil, nil},
		{"decisions 4: an empty object leaves every value", values(), nil, nil},
		{"decisions 4: null custom_fields removes every value", domain.Opt[map[string]json.RawMessage]{Set: true, Null: true},
			[]ValueChange{{ClearAll: true}}, nil},
		{"decisions 4: a null value removes that key", values("age", "null"), []ValueChange{{FieldID: "cf_age", Key: "age"}}, nil},
		{"decisions 4: values are stored as strings, 5 as \"5\" and true as \"true\"", values("age", "5", "vip", "true"),
			[]ValueChange{set("cf_age", "5"), set("cf_vip", "true")}, nil},
		{"decisions 4: a list is stored as its compact JSON text", values("tags", `[ "a", "b" ]`),
			[]ValueChange{set("cf_tags", `["a","b"]`)}, nil},
		{"decisions 4: an unknown key is a 400 at /custom_fields/<key>", values("nope", `"x"`), nil, []string{"/custom_fields/nope"}},
		{"decisions 4: an archived field's key is refused like an unknown one (live fields only)", values("retired", `"x"`), nil,
			[]string{"/custom_fields/retired"}},
		{"decisions 4: a value that does not fit the data_type is a 400", values("age", `"five"`), nil, []string{"/custom_fields/age"}},
		{"every bad key is reported in one 400, in key order, the good ones unwritten", values("vip", `"maybe"`, "age", "1.5", "tags", `["ok"]`), nil,
			[]string{"/custom_fields/age", "/custom_fields/vip"}},
		{"a key is escaped as a JSON pointer token (RFC 6901)", values("a/b~c", "1"), nil, []string{"/custom_fields/a~1b~0c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CustomValueChanges(tc.in, live)
			if tc.pointers == nil {
				if err != nil || !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("changes %+v, %v; want %+v", got, err, tc.want)
				}
				return
			}
			var ve *domain.ValidationError
			if !errors.As(err, &ve) || got != nil {
				t.Fatalf("got %+v, %v; want a 400 at %v", got, err, tc.pointers)
			}
			var pointers []string
			for _, e := range ve.Errors {
				pointers = append(pointers, e.Pointer)
			}
			if !reflect.DeepEqual(pointers, tc.pointers) {
				t.Fatalf("400 at %v, want %v", pointers, tc.pointers)
			}
		})
	}
}
