package api

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"strings"
	"testing"
)

// TestVendoredScalarIsTheNpmBundle holds docs/scalar/standalone.js.gz to
// the hash vendor.sh recorded of the file npm ships.
func TestVendoredScalarIsTheNpmBundle(t *testing.T) {
	recorded, err := os.ReadFile("docs/scalar/standalone.js.sha256")
	if err != nil {
		t.Fatal(err)
	}
	want, name, _ := strings.Cut(strings.TrimSpace(string(recorded)), "  ")
	if name != "standalone.js" {
		t.Fatalf("standalone.js.sha256 names %q", name)
	}
	zr, err := gzip.NewReader(bytes.NewReader(DocsScriptGzip()))
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	if _, err := io.Copy(h, zr); err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		t.Errorf("standalone.js.gz holds a file of sha256 %s; vendor.sh recorded %s", got, want)
	}
	for _, f := range []string{"LICENSE", "VERSION", "README.md"} {
		if _, err := os.Stat("docs/scalar/" + f); err != nil {
			t.Error(err)
		}
	}
}

func TestDocsHTMLNamesTheScriptByItsHash(t *testing.T) {
	page := string(DocsHTML())
	if v := DocsScriptVersion(); len(v) != 16 || !strings.Contains(page, "docs/reference.js?v="+v+`"`) {
		t.Errorf("the page does not ask for docs/reference.js?v=%s:\n%s", v, page)
	}
	if strings.Contains(page, scriptVersion) {
		t.Error("the placeholder is left in the page")
	}
}
