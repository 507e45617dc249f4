package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/pds-dev/pds/internal/domain"
)

// maxBody is the largest request body accepted (1 MiB).
const maxBody = 1 << 20

// statusError is an error that carries its own status (413, 415).
type statusError struct {
	status int
	detail string
}

func (e *statusError) Error() string { return e.detail }

// decodeJSON reads a JSON object body into dst strictly: the content type
// must be JSON, the body at most 1 MiB, every member known and well typed.
//
// A missing body is a 400 whatever the content type: 415 is only for a body
// that is there and is not JSON.
func decodeJSON(r *http.Request, dst any) error {
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &statusError{http.StatusRequestEntityTooLarge, fmt.Sprintf("The request body is larger than %d bytes.", maxBody)}
		}
		return &domain.ValidationError{Detail: "The request body could not be read."}
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return &domain.ValidationError{Detail: "This operation needs a JSON object as its request body."}
	}
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if ct == "" || err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		return &statusError{http.StatusUnsupportedMediaType, "The request body must be JSON; send Content-Type: application/json."}
	}
	if trimmed[0] != '{' {
		return &domain.ValidationError{Detail: "The request body must be a JSON object."}
	}
	if p := nulPointer(trimmed); p != "" {
		return domain.BodyError(p, "The member %s holds a NUL character (\\u0000), which no text may contain.", p)
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonError(err)
	}
	if dec.More() {
		return &domain.ValidationError{Detail: "The request body holds data after the JSON object."}
	}
	return nil
}

// jsonError turns a decoding error into a 400 that points at the member.
func jsonError(err error) error {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
		ve  *domain.ValidationError
	)
	switch {
	case errors.As(err, &ve):
		return ve
	case errors.As(err, &syn), errors.Is(err, io.ErrUnexpectedEOF):
		return &domain.ValidationError{Detail: "The request body is not valid JSON."}
	case errors.As(err, &typ):
		ptr := "/" + strings.ReplaceAll(typ.Field, ".", "/")
		return domain.BodyError(ptr, "The member %s must be of type %s, not %s.", ptr, jsonType(typ.Type.String()), typ.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return domain.BodyError("/"+name, "The member %q is not accepted by this operation.", name)
	}
	return &domain.ValidationError{Detail: "The request body is not valid: " + err.Error()}
}

func jsonType(goType string) string {
	switch {
	case strings.Contains(goType, "string"):
		return "string"
	case strings.Contains(goType, "bool"):
		return "boolean"
	case strings.Contains(goType, "int"), strings.Contains(goType, "float"):
		return "number"
	case strings.HasPrefix(goType, "[]"), strings.Contains(goType, "[]"):
		return "array"
	case strings.HasPrefix(goType, "map"):
		return "object"
	}
	return goType
}

// writeJSON writes v with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, err = w.Write(append(b, '\n'))
	return err
}
