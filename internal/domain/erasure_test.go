package domain

import (
	"encoding/json"
	"slices"
	"testing"
	"time"
)

func TestSuppressedValues(t *testing.T) {
	s := func(v string) *string { return &v }
	for _, c := range []struct {
		name                     string
		email, external, fID, ph *string
		want                     []SuppressedValue
	}{
		{"nothing named", nil, nil, nil, nil, nil},
		{"an email is kept in the form persons are matched by, lower-cased", s("Ada@Example.COM"), nil, nil, nil,
			[]SuppressedValue{{SuppressEmail, "ada@example.com", "/email"}}},
		{"every identifier, in the order of SuppressionKinds", s("a@x"), s("crm-1"), s("f-1"), s("+44 1"),
			[]SuppressedValue{{SuppressEmail, "a@x", "/email"}, {SuppressExternalID, "crm-1", "/external_id"},
				{SuppressFID, "f-1", "/f_id"}, {SuppressPhone, "+441", "/phone"}}},
		{"a phone is kept by its digits and leading +", nil, nil, nil, s("+44 (20) 7946-0000"),
			[]SuppressedValue{{SuppressPhone, "+442079460000", "/phone"}}},
		{"a phone without digits names nothing", nil, nil, nil, s("n/a"), nil},
		{"an empty value names nothing", s(""), s(""), nil, s(""), nil},
		{"external_id and f_id are kept as given", nil, s("CRM-1"), s("F-1"), nil,
			[]SuppressedValue{{SuppressExternalID, "CRM-1", "/external_id"}, {SuppressFID, "F-1", "/f_id"}}},
	} {
		if got := SuppressedValues(c.email, c.external, c.fID, c.ph); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestCheckedValues: a write's phone is checked by its digits and, for
// suppressions made before phones were kept by their digits, as written.
func TestCheckedValues(t *testing.T) {
	s := func(v string) *string { return &v }
	got := CheckedValues(s("a@x"), nil, nil, s("+44 1"))
	want := []SuppressedValue{{SuppressEmail, "a@x", "/email"}, {SuppressPhone, "+441", "/phone"}, {SuppressPhone, "+44 1", "/phone"}}
	if !slices.Equal(got, want) {
		t.Fatalf("%v, want %v", got, want)
	}
	if got := CheckedValues(nil, nil, nil, s("+441")); len(got) != 1 {
		t.Fatalf("a phone written as its digits is checked once: %v", got)
	}
}

func TestSuppressionHash(t *testing.T) {
	secret, other := []byte("secret of account a"), []byte("secret of account b")
	email := SuppressedValue{Kind: SuppressEmail, Value: "ada@example.com"}
	h := SuppressionHash(secret, email)
	for _, c := range []struct {
		name string
		got  string
		same bool
	}{
		{"the same identifier under the same secret", SuppressionHash(secret, email), true},
		{"another account's secret", SuppressionHash(other, email), false},
		{"the same text as another kind", SuppressionHash(secret, SuppressedValue{Kind: SuppressExternalID, Value: "ada@example.com"}), false},
		{"another identifier", SuppressionHash(secret, SuppressedValue{Kind: SuppressEmail, Value: "bob@example.com"}), false},
	} {
		if (c.got == h) != c.same {
			t.Errorf("%s: %s against %s", c.name, c.got, h)
		}
	}
	if len(h) != 64 {
		t.Errorf("hash %q is not 32 bytes of hex", h)
	}
}

func TestDeletedBody(t *testing.T) {
	at := time.Date(2026, 11, 21, 11, 2, 7, 311e6, time.UTC)
	b, err := DeletedBody("d1", EventPersonDeleted, at, "per_1", at)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := `{"id":"d1","event":"person.deleted","created":"2026-11-21T11:02:07.311Z","data":{"id":"per_1","date_deleted":"2026-11-21T11:02:07.311Z"}}`
	if string(b) != want {
		t.Fatalf("%s\nwant %s", b, want)
	}
}
