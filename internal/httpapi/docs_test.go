package httpapi_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pds-dev/pds/api"
	"github.com/pds-dev/pds/internal/httpapi/apitest"
	"github.com/pds-dev/pds/internal/testenv"
)

var (
	scriptTag = regexp.MustCompile(`<script\b[^>]*>`)
	scriptSrc = regexp.MustCompile(`<script src="([^"]+)"></script>`)
	urlAttr   = regexp.MustCompile(`\b(?:src|href|data-url)="([^"]*)"`)
)

// docsScriptPath is the path of the script the /docs page runs, as the page
// names it (relative to /docs), with its query.
func docsScriptPath(t *testing.T, page string) string {
	t.Helper()
	m := scriptSrc.FindAllStringSubmatch(page, -1)
	if len(m) != 1 {
		t.Fatalf("the page has %d script elements with a src, want 1:\n%s", len(m), page)
	}
	u, err := url.Parse("http://pds.test/docs")
	if err != nil {
		t.Fatal(err)
	}
	src, err := url.Parse(m[0][1])
	if err != nil {
		t.Fatal(err)
	}
	return u.ResolveReference(src).RequestURI()
}

// TestDocsPage: /docs is a small page that runs one script of this server's
// on /openapi.json, under a Content-Security-Policy that lets nothing load
// from elsewhere. (TestDocsInChromium looks at what it renders.)
func TestDocsPage(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, testenv.SQLite)
	res := env.Get("", "/docs").Want(200)
	for name, want := range map[string]string{
		"Content-Type":           "text/html; charset=utf-8",
		"X-Content-Type-Options": "nosniff",
		"Cache-Control":          "public, max-age=300",
	} {
		if got := res.Header.Get(name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}

	csp := map[string][]string{}
	for _, d := range strings.Split(res.Header.Get("Content-Security-Policy"), ";") {
		if f := strings.Fields(d); len(f) > 0 {
			csp[f[0]] = f[1:]
		}
	}
	for directive, want := range map[string][]string{
		"default-src":     {"'none'"},
		"script-src":      {"'self'"},
		"style-src":       {"'self'", "'unsafe-inline'"},
		"img-src":         {"'self'", "data:"},
		"connect-src":     {"'self'"},
		"base-uri":        {"'none'"},
		"form-action":     {"'none'"},
		"frame-ancestors": {"'none'"},
	} {
		if !slices.Equal(csp[directive], want) {
			t.Errorf("Content-Security-Policy %s %v, want %v", directive, csp[directive], want)
		}
	}
	if len(csp) != 8 {
		t.Errorf("Content-Security-Policy has directives %v, want the eight above", csp)
	}

	page := string(res.Body)
	if len(page) > 4096 {
		t.Errorf("the page is %d bytes; the renderer belongs in its script", len(page))
	}
	if tags := scriptTag.FindAllString(page, -1); len(tags) != 1 || !strings.Contains(tags[0], " src=") {
		t.Errorf("script elements %q, want one, with a src (the policy runs no inline script)", tags)
	}
	for _, m := range urlAttr.FindAllStringSubmatch(page, -1) {
		if u, err := url.Parse(m[1]); err != nil || u.IsAbs() && u.Scheme != "data" || u.Host != "" {
			t.Errorf("the page links %q, which is not this server's", m[1])
		}
	}
	if !strings.Contains(page, `data-url="openapi.json"`) {
		t.Error("the page does not render openapi.json")
	}
	var cfg struct {
		WithDefaultFonts, Telemetry *bool
		Agent, MCP                  struct{ Disabled bool }
	}
	m := regexp.MustCompile(`data-configuration='([^']*)'`).FindStringSubmatch(page)
	if m == nil || json.Unmarshal([]byte(m[1]), &cfg) != nil {
		t.Fatalf("no data-configuration JSON in the page:\n%s", page)
	}
	if cfg.WithDefaultFonts == nil || *cfg.WithDefaultFonts || cfg.Telemetry == nil || *cfg.Telemetry ||
		!cfg.Agent.Disabled || !cfg.MCP.Disabled {
		t.Errorf("the renderer may reach outside: %s", m[1])
	}
	if got, want := docsScriptPath(t, page), "/docs/reference.js?v="+api.DocsScriptVersion(); got != want {
		t.Errorf("the page runs %s, want %s", got, want)
	}
}

// TestDocsScript: the page's script is served compressed to a browser,
// plain to a client that takes no gzip, and cached for good under the URL
// the page names.
func TestDocsScript(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, testenv.SQLite)
	path := docsScriptPath(t, string(env.Get("", "/docs").Want(200).Body))
	get := func(path, acceptEncoding string) *apitest.Response {
		return env.Do(apitest.Request{Method: http.MethodGet, Path: path,
			Header: http.Header{"Accept-Encoding": {acceptEncoding}}}).Want(200)
	}

	gz := get(path, "gzip, deflate, br")
	for name, want := range map[string]string{
		"Content-Type":           "text/javascript; charset=utf-8",
		"Content-Encoding":       "gzip",
		"Cache-Control":          "public, max-age=31536000, immutable",
		"Vary":                   "Accept-Encoding",
		"X-Content-Type-Options": "nosniff",
	} {
		if got := gz.Header.Get(name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	if !bytes.Equal(gz.Body, api.DocsScriptGzip()) {
		t.Errorf("the gzip answer is not the embedded bundle (%d bytes)", len(gz.Body))
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz.Body))
	if err != nil {
		t.Fatal(err)
	}
	script, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(script, []byte("@scalar/api-reference")) {
		t.Error("the script is not the Scalar API Reference")
	}

	// TestAcceptsGzip has the other ways of refusing gzip.
	plain := get(path, "identity")
	if plain.Header.Get("Content-Encoding") != "" || plain.Header.Get("Content-Type") != "text/javascript; charset=utf-8" {
		t.Errorf("without gzip: Content-Encoding %q, Content-Type %q",
			plain.Header.Get("Content-Encoding"), plain.Header.Get("Content-Type"))
	}
	if !bytes.Equal(plain.Body, script) {
		t.Errorf("without gzip: %d bytes, want the %d of the script", len(plain.Body), len(script))
	}

	for _, other := range []string{"/docs/reference.js", "/docs/reference.js?v=0123456789abcdef"} {
		if cc := get(other, "gzip").Header.Get("Cache-Control"); cc != "public, max-age=300" {
			t.Errorf("%s: Cache-Control %q; only the current version may be kept for good", other, cc)
		}
	}
}
