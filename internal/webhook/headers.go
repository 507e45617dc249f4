package webhook

import (
	"net/http"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/pds-dev/pds/internal/domain"
)

// Bounds of a subscription's own headers (issue 67).
const (
	maxHeaders     = 10
	maxHeaderBytes = 4096
)

// reservedHeaders are the names a subscription may not set: those pds sets
// on every attempt or that would change the message, and the hop-by-hop
// ones, which belong to the connection rather than to the receiver.
var reservedHeaders = []string{
	"Content-Type", "Content-Length", "Host", "User-Agent", "Traceparent", "Tracestate",
	"Connection", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding", "Te", "Trailer", "Upgrade",
}

// reservedPrefixes are the families of signed headers: the spec's Service-*
// and Standard Webhooks' webhook-*.
var reservedPrefixes = []string{"service-", "webhook-"}

// CheckHeaders validates a subscription's headers: at most maxHeaders,
// maxHeaderBytes of names and values together, each name an HTTP token
// that pds does not set itself, each value without CR, LF or NUL (which
// would split or end the header). A refusal names the member.
func CheckHeaders(headers map[string]string) error {
	if len(headers) > maxHeaders {
		return domain.BodyError("/headers", "headers holds %d names; at most %d are allowed.", len(headers), maxHeaders)
	}
	size := 0
	for name, value := range headers {
		pointer := "/headers/" + pointerEscape(name)
		size += len(name) + len(value)
		if !httpguts.ValidHeaderFieldName(name) {
			return domain.BodyError(pointer, "header name %q is not an HTTP token (letters, digits and !#$%%&'*+-.^_`|~).", name)
		}
		if reservedHeader(name) {
			return domain.BodyError(pointer, "header %q is set by pds on every delivery and cannot be chosen; reserved are %s, Service-* and webhook-*.",
				name, strings.Join(reservedHeaders, ", "))
		}
		if strings.ContainsAny(value, "\r\n\x00") {
			return domain.BodyError(pointer, "the value of header %q holds a CR, LF or NUL, which cannot be sent.", name)
		}
	}
	if size > maxHeaderBytes {
		return domain.BodyError("/headers", "headers hold %d bytes of names and values; at most %d are allowed.", size, maxHeaderBytes)
	}
	return nil
}

func reservedHeader(name string) bool {
	lower := strings.ToLower(name)
	for _, p := range reservedPrefixes {
		if strings.HasPrefix(lower, p) {
			return true
		}
	}
	for _, r := range reservedHeaders {
		if strings.EqualFold(r, name) {
			return true
		}
	}
	return false
}

// pointerEscape escapes a member name for a JSON pointer (RFC 6901).
func pointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// HeaderHints shows a subscription's headers without their values, as a
// read shows the signing secret: each name with the last four characters
// of a value long enough that they reveal little, "..." alone otherwise.
func HeaderHints(headers map[string]string) map[string]string {
	out := make(map[string]string, len(headers))
	for name, value := range headers {
		out[name] = HeaderHint(value)
	}
	return out
}

// HeaderHint masks one header value (see HeaderHints).
func HeaderHint(value string) string {
	if len(value) < 16 {
		return "..."
	}
	return "..." + value[len(value)-4:]
}

// setCustomHeaders puts a subscription's own headers on an attempt; the
// signed headers are set after them, and CheckHeaders keeps their names
// apart.
func setCustomHeaders(h http.Header, headers map[string]string) {
	for name, value := range headers {
		h.Set(name, value)
	}
}

// redactCustom replaces, in an attempt's record, the values of the
// subscription's own headers: the delivery log shows their names, never
// what may be a credential.
func redactCustom(sent map[string]string, headers map[string]string) {
	for name := range headers {
		canonical := http.CanonicalHeaderKey(name)
		if _, ok := sent[canonical]; ok {
			sent[canonical] = domain.Redacted
		}
	}
}
