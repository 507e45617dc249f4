package client

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/oapi-codegen/nullable"
)

// WithKey sends key as `Authorization: Bearer <key>` on every request.
func WithKey(key string) ClientOption {
	return WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+key)
		return nil
	})
}

// Set is a body member that holds v. A zero nullable.Nullable (the member
// left alone) is absent from the body: unchanged.
func Set[T any](v T) nullable.Nullable[T] { return nullable.NewNullableWithValue(v) }

// Null is a body member sent as null: it clears the value.
func Null[T any]() nullable.Nullable[T] { return nullable.NewNullNullable[T]() }

// Ptr is a pointer to v, for optional query parameters and members.
func Ptr[T any](v T) *T { return &v }

// The values of CustomFieldInput: which a field accepts depends on its
// data_type (see the contract). A nil value removes the key. Numbers that
// must keep their exact writing (a money value of "19.90") can be sent with
// Text, which every numeric data_type accepts.

// Text is a string value (str, unicode, date; or a number or boolean written
// as text).
func Text(s string) *CustomFieldInputValue { return rawValue(json.Marshal(s)) }

// Int is an integer value, written exactly (int).
func Int(n int64) *CustomFieldInputValue { return rawValue(strconv.AppendInt(nil, n, 10), nil) }

// Float is a number value (float, money).
func Float(f float64) *CustomFieldInputValue { return rawValue(json.Marshal(f)) }

// Bool is a boolean value (bool).
func Bool(b bool) *CustomFieldInputValue { return rawValue(strconv.AppendBool(nil, b), nil) }

// List is an array of strings (list).
func List(items ...string) *CustomFieldInputValue {
	if items == nil {
		items = []string{}
	}
	return rawValue(json.Marshal(items))
}

func rawValue(b []byte, err error) *CustomFieldInputValue {
	if err != nil {
		// Strings, finite numbers and string slices always marshal; a NaN or
		// an infinity has no JSON form.
		panic("client: a custom field value with no JSON form: " + err.Error())
	}
	var v CustomFieldInputValue
	if err := v.UnmarshalJSON(b); err != nil {
		panic(err)
	}
	return &v
}
