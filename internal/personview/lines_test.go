package personview

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

// TestAppendCompactLineMatchesEncoder: the export's hand-written line is
// byte for byte what json.Encoder writes for Compact, for persons with
// missing, empty, escaped, non-ASCII and invalid text, any number of tags
// and values, and times of any precision, zone and year.
func TestAppendCompactLineMatchesEncoder(t *testing.T) {
	texts := []string{"", "Ada", "a\"b\\c", "<script>&amp;</script>", "tab\there\nnew\rline\b\f\x00\x1f\x7f",
		"Zoë Ñandú 東京 🎉", "line\u2028sep\u2029", "bad \xff\xfe utf8 \xc3", "crm-12345", "+44 20 7946 0000", "/slash/"}
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func() string { return texts[rng.IntN(len(texts))] }
	maybe := func() *string {
		if rng.IntN(4) == 0 {
			return nil
		}
		s := pick()
		return &s
	}
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	for i := range 5000 {
		p := domain.Person{ID: pick(), Email: maybe(), ExternalID: maybe(), FID: maybe(), FirstName: maybe(), LastName: maybe(), Phone: maybe(),
			DateCreated:  time.UnixMilli(rng.Int64N(1 << 46)).In(time.FixedZone("x", 3600*rng.IntN(12))).Add(time.Duration(rng.IntN(1e6))),
			DateLastSeen: time.UnixMilli(rng.Int64N(1 << 48))}
		switch rng.IntN(3) {
		case 0: // nil, as a person read without details
		case 1:
			p.TagIDs, p.CustomFields = []string{}, map[string]string{}
		default:
			p.CustomFields = map[string]string{}
			for range rng.IntN(20) {
				p.TagIDs = append(p.TagIDs, pick())
				p.CustomFields[pick()+pick()] = pick()
			}
		}
		// Aliases, which only the export's line carries, for a person
		// merged into in one line of four.
		if rng.IntN(4) == 0 {
			for range 1 + rng.IntN(3) {
				p.Aliases = append(p.Aliases, domain.PersonAlias{Kind: "email", Value: pick(), From: pick(),
					DateMerged: domain.T(time.UnixMilli(rng.Int64N(1 << 46)).Add(time.Duration(rng.IntN(1e6))))})
			}
		}
		want.Reset()
		if err := enc.Encode(Compact(&p)); err != nil {
			t.Fatal(err)
		}
		if got := AppendCompactLine(nil, &p); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("person %d:\ngot  %s\nwant %s", i, got, want.Bytes())
		}
		want.Reset()
		if err := enc.Encode(Exported(&p)); err != nil {
			t.Fatal(err)
		}
		if got := AppendExportLine(nil, &p); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("export line of person %d:\ngot  %s\nwant %s", i, got, want.Bytes())
		}
	}
}
