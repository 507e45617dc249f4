package httpapi

import (
	"bytes"
	jsonv1 "encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

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
// must be JSON in UTF-8, the body at most 1 MiB and I-JSON (RFC 7493: valid
// UTF-8, no lone surrogate, no member twice), every member known by its exact
// name and well typed. encoding/json would replace bad text with U+FFFD, let
// a repeated member win and match names in any case; the JSON v2 decoder
// refuses all of these by default.
//
// A missing body is a 400 whatever the content type: 415 is only for a body
// that is there and is not JSON.
func decodeJSON(r *http.Request, dst any) error {
	body, err := readJSONBody(r)
	if err != nil {
		return err
	}
	return DecodeObject("The request body", body, dst)
}

// bodyTime reads the body member name, an RFC 3339 date-time with Z or an
// offset whose year in UTC has four digits (domain.FitsRFC3339).
func bodyTime(name, v string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil || !domain.FitsRFC3339(t) {
		return time.Time{}, domain.BodyError("/"+name, "%s must be an RFC 3339 date-time with Z or an offset, of the years 0000 to 9999 in UTC; got %q.", name, v)
	}
	return t.UTC(), nil
}

// readJSONBody reads a body that decodeJSON or a batch decodes: at most
// maxBody bytes, there, and sent as JSON.
func readJSONBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, &statusError{http.StatusRequestEntityTooLarge, fmt.Sprintf("The request body is larger than %d bytes.", maxBody)}
		}
		return nil, &domain.ValidationError{Detail: "The request body could not be read."}
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil, &domain.ValidationError{Detail: "This operation needs a JSON object as its request body."}
	}
	if err := checkContentType(r.Header.Get("Content-Type")); err != nil {
		return nil, err
	}
	return trimmed, nil
}

// DecodeObject reads one JSON object (the request body, a line of an import)
// into dst with the strictness of every request body: I-JSON, each member
// known by its exact name and well typed, no NUL in any text. Errors are
// *domain.ValidationError values pointing at the member; what names the
// text in their details ("The request body").
func DecodeObject(what string, text []byte, dst any) error {
	text = bytes.TrimSpace(text)
	if err := decodeMembers(what, text, dst); err != nil {
		return err
	}
	if p := nulPointer(text); p != "" {
		return domain.BodyError(p, "The member %s holds a NUL character (\\u0000), which no text may contain.", p)
	}
	return nil
}

// decodeMembers is DecodeObject without the look for NUL: a batch looks in
// each item on its own, so that a NUL refuses only the item holding it.
func decodeMembers(what string, text []byte, dst any) error {
	if len(text) == 0 || text[0] != '{' {
		return &domain.ValidationError{Detail: what + " must be a JSON object."}
	}
	if err := json.Unmarshal(text, dst, json.RejectUnknownMembers(true)); err != nil {
		return jsonError(what, text, err)
	}
	return nil
}

// checkContentType accepts JSON media types in UTF-8, the only encoding of
// JSON text exchanged between systems (RFC 8259 section 8.1).
func checkContentType(ct string) error {
	mt, params, err := mime.ParseMediaType(ct)
	if ct == "" || err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		return &statusError{http.StatusUnsupportedMediaType, "The request body must be JSON; send Content-Type: application/json."}
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return &statusError{http.StatusUnsupportedMediaType, fmt.Sprintf("The request body must be UTF-8 JSON; charset %q is not accepted.", cs)}
	}
	return nil
}

// jsonError turns a decoding error of text into a 400 that points at the
// member, or at the line and column where the text stops being JSON.
func jsonError(what string, text []byte, err error) error {
	var (
		syn *jsontext.SyntacticError
		sem *json.SemanticError
		ve  *domain.ValidationError
	)
	switch {
	case errors.As(err, &ve):
		return ve
	case errors.As(err, &syn):
		ptr := orRoot(string(syn.JSONPointer))
		switch {
		case errors.Is(syn.Err, jsontext.ErrDuplicateName):
			return domain.BodyError(ptr, "The member %s is given more than once; give each member once.", ptr)
		case strings.Contains(syn.Err.Error(), "UTF-8"), strings.Contains(syn.Err.Error(), "surrogate"):
			return domain.BodyError(ptr, "The member %s holds text that is not valid Unicode (bytes that are not UTF-8, or an escaped lone surrogate such as \\ud800).", ptr)
		case errors.Is(syn.Err, io.ErrUnexpectedEOF):
			return &domain.ValidationError{Detail: what + " is not valid JSON: it ends too early."}
		}
		line, col := position(text, syn.ByteOffset)
		return &domain.ValidationError{Detail: fmt.Sprintf("%s is not valid JSON at line %d, column %d: %s.", what, line, col, syn.Err.Error())}
	case errors.As(err, &sem):
		ptr := orRoot(string(sem.JSONPointer))
		if errors.Is(sem.Err, json.ErrUnknownName) {
			name := sem.JSONPointer.LastToken()
			return domain.BodyError(ptr, "The member %q is not accepted by this operation (member names match exactly, case included).", name)
		}
		return domain.BodyError(ptr, "The member %s must be of type %s, not %s.", ptr, jsonType(goTypeOf(sem)), sem.JSONKind)
	}
	return &domain.ValidationError{Detail: what + " is not valid: " + err.Error()}
}

// goTypeOf names the Go type a member failed to decode into, looking through
// domain.Opt, whose own decoding reports the inner type.
func goTypeOf(sem *json.SemanticError) string {
	var inner *jsonv1.UnmarshalTypeError
	if errors.As(sem.Err, &inner) {
		return inner.Type.String()
	}
	if sem.GoType == nil {
		return "value"
	}
	return sem.GoType.String()
}

func jsonType(goType string) string {
	switch {
	case strings.HasPrefix(goType, "map"):
		return "object"
	case strings.HasPrefix(goType, "[]"):
		return "array"
	case strings.Contains(goType, "string"):
		return "string"
	case strings.Contains(goType, "bool"):
		return "boolean"
	case strings.Contains(goType, "int"), strings.Contains(goType, "float"):
		return "number"
	}
	return goType
}

// writeJSON writes v with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	b, err := jsonv1.Marshal(v)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, err = w.Write(append(b, '\n'))
	return err
}

// position is the 1-based line and column (in characters) of a byte
// offset into text.
func position(text []byte, offset int64) (line, col int) {
	offset = min(max(offset, 0), int64(len(text)))
	before := text[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = utf8.RuneCount(before[bytes.LastIndexByte(before, '\n')+1:]) + 1
	return line, col
}
