package service

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pds-dev/pds/internal/domain"
)

// TestEnumDetail: a value outside its enumeration is named with the values
// (or, for the 68 flavors, where they are listed) and a near miss, each
// said once.
func TestEnumDetail(t *testing.T) {
	for _, c := range []struct {
		name, value string
		allowed     []string
		want        []string
		not         []string
	}{
		{"context", "persn", domain.TagContexts, []string{`"event"`, `"person"`, `got "persn"`, `Did you mean "person"?`}, nil},
		{"context", "zzz", domain.TagContexts, []string{`"breadcrumb" or "person"`}, []string{"Did you mean"}},
		{"flavor", "email_veiw", domain.BreadcrumbFlavors, []string{fmt.Sprintf(`flavor "email_veiw" is not one of the %d values`, len(domain.BreadcrumbFlavors)), `Did you mean "email_view"?`},
			[]string{"ad_click"}},
	} {
		got := EnumDetail(c.name, c.value, c.allowed)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("EnumDetail(%s, %q) = %q, want it to contain %q", c.name, c.value, got, w)
			}
		}
		for _, n := range c.not {
			if strings.Contains(got, n) {
				t.Errorf("EnumDetail(%s, %q) = %q, want no %q", c.name, c.value, got, n)
			}
		}
	}
}
