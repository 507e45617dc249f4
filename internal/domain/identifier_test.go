package domain

import (
	"strings"
	"testing"
	"unicode"
)

func TestNormalIdentifier(t *testing.T) {
	long := strings.Repeat("a", MaxPersonText-len("@example.org")+1) + "@example.org"
	for _, tc := range []struct {
		name, kind, in string
		want           string // "" when refused
	}{
		{"a normal email is itself", KindEmail, "kate@example.org", "kate@example.org"},
		{"an email's case folds", KindEmail, "Kate@Example.ORG", "kate@example.org"},
		{"the Kelvin sign is a K", KindEmail, "\u212Aate@example.org", "kate@example.org"},
		{"fullwidth letters are letters", KindEmail, "\uff4bate@example.org", "kate@example.org"},
		{"a ligature is its letters", KindEmail, "\ufb01nn@example.org", "finn@example.org"},
		{"composed and decomposed accents are one", KindEmail, "jose\u0301@example.org", "jos\u00e9@example.org"},
		{"a zero-width space is refused", KindEmail, "erase.me@example.org\u200b", ""},
		{"a zero-width joiner is refused", KindExternalID, "crm\u200d-1", ""},
		{"a soft hyphen is refused", KindExternalID, "crm\u00ad1", ""},
		{"a byte order mark is refused", KindFID, "\ufefff-1", ""},
		{"a bidirectional override is refused", KindExternalID, "crm-\u202e1", ""},
		{"NUL is refused", KindExternalID, "crm\x00", ""},
		{"a tab is refused", KindExternalID, "crm\t1", ""},
		{"a line separator is refused", KindExternalID, "crm\u20281", ""},
		{"a private-use character is refused", KindExternalID, "crm\ue0001", ""},
		{"a trailing no-break space is refused", KindEmail, "erase.me@example.org\u00a0", ""},
		{"a trailing space is refused", KindExternalID, "erase-me-ext ", ""},
		{"a leading space is refused", KindFID, " f-1", ""},
		{"an ideographic space at the end is refused", KindExternalID, "crm-1\u3000", ""},
		{"a space inside an external id stays", KindExternalID, "crm 1", "crm 1"},
		{"a no-break space inside an external id is a space", KindExternalID, "crm\u00a01", "crm 1"},
		{"an external id keeps its case", KindExternalID, "CRM-Ab", "CRM-Ab"},
		{"an external id's fullwidth digits are digits", KindExternalID, "crm-\uff11", "crm-1"},
		{"an f_id keeps its case", KindFID, "Fb.Id", "Fb.Id"},
		{"a space inside an email is refused", KindEmail, "kate smith@example.org", ""},
		{"a no-break space inside an email is refused", KindEmail, "kate\u00a0smith@example.org", ""},
		{"an email needs its @", KindEmail, "kate.example.org", ""},
		{"empty is refused", KindExternalID, "", ""},
		{"longer than the bound is refused", KindEmail, long, ""},
		{"a phone is kept as written", KindPhone, "+44 (0)20 7946-0000", "+44 (0)20 7946-0000"},
		{"a phone's fullwidth digits are digits", KindPhone, "\uff0b44 20", "+44 20"},
		{"a phone with a zero-width space is refused", KindPhone, "+4420\u200b7946", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NormalIdentifier(tc.kind, tc.in)
			switch {
			case tc.want == "" && err == nil:
				t.Fatalf("%q accepted as %q", tc.in, got)
			case tc.want != "" && err != nil:
				t.Fatalf("%q refused: %v", tc.in, err)
			case got != tc.want:
				t.Fatalf("%q is %q, want %q", tc.in, got, tc.want)
			}
			if err == nil {
				if again, err := NormalIdentifier(tc.kind, got); err != nil || again != got {
					t.Fatalf("the normal form %q is not its own: %q, %v", got, again, err)
				}
				if tc.kind == KindEmail && NormEmail(tc.in) != got {
					t.Fatalf("NormEmail(%q) = %q, not the normal form %q", tc.in, NormEmail(tc.in), got)
				}
			}
		})
	}
}

// TestNormalIdentifierIsIdempotent: for every character of the planes
// that hold assigned letters (0 to 3; the rest are unassigned or private
// use, which is refused), between letters, the normal form of a normal
// form is itself, for each kind, so that a stored value matches itself
// when sent again.
func TestNormalIdentifierIsIdempotent(t *testing.T) {
	t.Parallel()
	for r := rune(0); r < 0x40000; r++ {
		if r >= 0xd800 && r <= 0xdfff || !unicode.IsPrint(r) && !unicode.IsSpace(r) && !unicode.IsMark(r) {
			continue
		}
		for _, kind := range []string{KindEmail, KindExternalID} {
			v := "a" + string(r) + "b"
			if kind == KindEmail {
				v += "@example.org"
			}
			n, err := NormalIdentifier(kind, v)
			if err != nil {
				continue
			}
			if again, err := NormalIdentifier(kind, n); err != nil || again != n {
				t.Fatalf("%s U+%04X: %q normalises to %q, then to %q (%v)", kind, r, v, n, again, err)
			}
		}
	}
}

func TestPhoneDigits(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"+44 20 7946 0000", "+442079460000"},
		{"+44 (20) 7946-0000", "+442079460000"},
		{"  +1 555 0100", "+15550100"},
		{"0044 20 7946 0000", "00442079460000"},
		{"\uff0b\uff14\uff14 20", "+4420"},
		{"ext. 12", "12"},
		{"n/a", ""},
	} {
		if got := PhoneDigits(tc.in); got != tc.want {
			t.Errorf("PhoneDigits(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
