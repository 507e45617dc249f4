package personview

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

// BenchmarkCompactLines encodes compact persons one per line, as GET
// /persons/export writes them: a person with three tags and three custom
// field values.
func BenchmarkCompactLines(b *testing.B) {
	text := func(s string) *string { return &s }
	persons := make([]domain.Person, 1000)
	for i := range persons {
		persons[i] = domain.Person{ID: fmt.Sprintf("per_01a208f2be5df6cb34e6%04d", i), Email: text(fmt.Sprintf("p%d@example.com", i)),
			ExternalID: text(fmt.Sprintf("crm-%d", i)), FirstName: text("Ada"), LastName: text("Lovelace"), Phone: text("+44 20 7946 0000"),
			TagIDs:       []string{"tag_01a208f2be5df6cb34e60001", "tag_01a208f2be5df6cb34e60002", "tag_01a208f2be5df6cb34e60003"},
			CustomFields: map[string]string{"score": "12", "plan": "gold", "city": "London"},
			DateCreated:  time.UnixMilli(1_795_255_800_000 + int64(i)), DateLastSeen: time.UnixMilli(1_795_255_900_000 + int64(i))}
	}
	out := bufio.NewWriterSize(io.Discard, 64<<10)
	b.Run("encoder", func(b *testing.B) {
		enc := json.NewEncoder(out)
		b.ReportAllocs()
		for b.Loop() {
			for i := range persons {
				if err := enc.Encode(Compact(&persons[i])); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.N*len(persons))/b.Elapsed().Seconds(), "persons/s")
	})
	b.Run("lines", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for i := range persons {
				if _, err := out.Write(AppendCompactLine(out.AvailableBuffer(), &persons[i])); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.N*len(persons))/b.Elapsed().Seconds(), "persons/s")
	})
}
