package domain

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Identifier kinds: the values that find a person (email, external_id,
// f_id) and phone, which an erasure also suppresses.
const (
	KindEmail      = "email"
	KindExternalID = "external_id"
	KindFID        = "f_id"
	KindPhone      = "phone"
)

// NormalIdentifier is the one form in which an identifier is matched,
// held unique, suppressed and stored, or the reason v cannot be one:
//
//   - refused: the empty string; a control, format, private-use,
//     surrogate or line/paragraph separator character anywhere (NUL, tab,
//     U+200B zero-width space, U+00AD soft hyphen, U+FEFF, bidirectional
//     controls), since two values that look the same must be the same
//     value; white space at either end (after the mapping below, so a
//     trailing no-break space is refused too); more than MaxPersonText
//     characters; an email that is not local@domain without white space;
//   - mapped: Unicode NFKC, which folds compatibility forms into their
//     plain letters (the Kelvin sign into K, fullwidth and ligature forms,
//     a no-break space into a space); an email is then lower-cased (as
//     RFC 8265 maps a case-insensitive identifier) and put in NFKC again.
//     external_id and f_id keep their case: they are compared exactly.
//
// It is idempotent: NormalIdentifier of a normal form is that form. The
// store keeps the normal form itself, so a client that sends an identifier
// in normal form reads back exactly what it sent, and one that sends
// another form reads back the normal form.
func NormalIdentifier(kind, v string) (string, error) {
	if v == "" {
		return "", fmt.Errorf("%s must not be empty; send null to leave it unset", kind)
	}
	if !utf8.ValidString(v) {
		return "", fmt.Errorf("%s is not UTF-8 text", kind)
	}
	for _, r := range v {
		if invisible(r) {
			return "", fmt.Errorf("%s holds the character U+%04X, which shows as nothing or as white space; an identifier is what it looks like", kind, r)
		}
	}
	n := norm.NFKC.String(v)
	if kind == KindEmail {
		n = norm.NFKC.String(strings.ToLower(n))
	}
	first, _ := utf8.DecodeRuneInString(n)
	last, _ := utf8.DecodeLastRuneInString(n)
	switch {
	case unicode.IsSpace(first) || unicode.IsSpace(last):
		return "", fmt.Errorf("%s begins or ends with white space", kind)
	case utf8.RuneCountInString(n) > MaxPersonText:
		return "", fmt.Errorf("%s is longer than %d characters", kind, MaxPersonText)
	case kind == KindEmail && !plausibleEmail(n):
		return "", fmt.Errorf("email %q is not an email address (local@domain, no spaces)", v)
	}
	return n, nil
}

// invisible says whether r is refused in an identifier: a character that
// shows as nothing, or moves or joins what is around it, so that a value
// holding it looks like one without it.
func invisible(r rune) bool {
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs, unicode.Zl, unicode.Zp) ||
		unicode.Is(unicode.Noncharacter_Code_Point, r) || unicode.Is(unicode.Variation_Selector, r)
}

// PhoneDigits is the form in which a phone number is suppressed: a
// leading + (after any white space) and its decimal digits, in ASCII after
// NFKC (fullwidth digits count), every other character dropped; so that
// "+44 20 7946 0000" and "+44 (0)20-7946-0000" differ only where their
// digits do. "" when it has no digit. A phone is not an identifier that
// finds a person: it is stored as written (NormalIdentifier's checks and
// mapping), and only its suppression compares digits.
func PhoneDigits(phone string) string {
	n := norm.NFKC.String(phone)
	var b strings.Builder
	if strings.HasPrefix(strings.TrimSpace(n), "+") {
		b.WriteByte('+')
	}
	digits := 0
	for _, r := range n {
		if r >= '0' && r <= '9' {
			b.WriteRune(r)
			digits++
		}
	}
	if digits == 0 {
		return ""
	}
	return b.String()
}

// NormEmail is the form emails are compared in, for a value already
// checked (NormalIdentifier's mapping, without its refusals): what the
// unique index of persons holds.
func NormEmail(email string) string {
	return norm.NFKC.String(strings.ToLower(norm.NFKC.String(email)))
}
