package secrets

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

const (
	keyA = "2b7e151628aed2a6abf7158809cf4f3c2b7e151628aed2a6abf7158809cf4f3c"
	keyB = "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		keys       int // 0: refused
	}{
		{"one key, as openssl rand -hex 32 prints it", keyA + "\n", 1},
		{"a key without a newline", keyA, 1},
		{"two keys: the first seals", keyB + "\n" + keyA + "\n", 2},
		{"blank lines are skipped", "\n" + keyA + "\n\n", 1},
		{"upper-case hex", strings.ToUpper(keyA), 1},
		{"too short", keyA[:62], 0},
		{"not hex", strings.Repeat("zz", 32), 0},
		{"empty", "\n", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := Parse(tc.text)
			switch {
			case tc.keys == 0 && err == nil:
				t.Fatal("accepted")
			case tc.keys > 0 && (err != nil || len(k.keys) != tc.keys):
				t.Fatalf("%v, %v", k, err)
			}
		})
	}
}

func TestSealAndOpen(t *testing.T) {
	a, _ := Parse(keyA)
	b, _ := Parse(keyB)
	both, _ := Parse(keyB + "\n" + keyA)
	sealed, err := a.SealString("whsec_abc", "webhook:wh_1")
	if err != nil || !strings.HasPrefix(sealed, Prefix+a.ID()+":") || strings.Contains(sealed, "whsec_") {
		t.Fatalf("sealed %q, %v", sealed, err)
	}
	again, _ := a.SealString("whsec_abc", "webhook:wh_1")
	if again == sealed {
		t.Fatal("two seals of one value are the same: the nonce is not fresh")
	}
	for _, tc := range []struct {
		name   string
		k      *Keyring
		stored string
		place  string
		want   string // "" when it must not open
		miss   bool   // a MissingKeyError
	}{
		{"its key opens it", a, sealed, "webhook:wh_1", "whsec_abc", false},
		{"a keyring holding its key opens it", both, sealed, "webhook:wh_1", "whsec_abc", false},
		{"another key does not", b, sealed, "webhook:wh_1", "", true},
		{"no key does not", nil, sealed, "webhook:wh_1", "", true},
		{"another place does not", a, sealed, "webhook:wh_2", "", false},
		{"an altered value does not", a, sealed[:len(sealed)-2] + "AA", "webhook:wh_1", "", false},
		{"a value in clear is itself", a, "whsec_clear", "webhook:wh_1", "whsec_clear", false},
		{"a value in clear is itself without a key", nil, "whsec_clear", "webhook:wh_1", "whsec_clear", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.k.OpenString(tc.stored, tc.place)
			var missing *MissingKeyError
			switch {
			case tc.want != "" && (err != nil || got != tc.want):
				t.Fatalf("%q, %v", got, err)
			case tc.want == "" && err == nil:
				t.Fatalf("opened as %q", got)
			case tc.miss != errors.As(err, &missing):
				t.Fatalf("%v, want a missing key: %v", err, tc.miss)
			}
		})
	}
	var nilKeys *Keyring
	if v, err := nilKeys.Seal([]byte("x"), "p"); err != nil || !bytes.Equal(v, []byte("x")) {
		t.Fatal("without a key a value is stored in clear")
	}
	if id, ok := KeyOf([]byte(sealed)); !ok || id != a.ID() || a.ID() == b.ID() || !both.Has(a.ID()) || both.ID() != b.ID() {
		t.Fatalf("key ids: %q %v", id, ok)
	}
}
